-- Applies one command of an `add` board in ONE statement (one round trip, one implicit
-- transaction): the member's score grows by the delta.
-- $1 event_id uuid, $2 board_id text, $3 user_id text, $4 delta bigint (already within the
-- board's delta bounds), $5 traceparent text (the request's W3C trace context, or NULL),
-- $6 the definition revision the command was validated against (0: undeclared),
-- $7 tie sign (0 on boards whose ties go by user id; -1 descending, +1 ascending earliest),
-- $8 min score, $9 max score, $10 metadata (JSON text, or NULL: keep the prior).
--
-- First arrival: `prior` is empty and the board's definition still has revision $6, so the
-- score is upserted (the row lock serializes concurrent commands for one user: no lost update)
-- unless the sum leaves [$8, $9], the event is recorded with the score and version it
-- produced, and the outbox row carries them (tie and metadata too) to the projection.
-- Earliest boards: a member whose score changes draws its tie from user_scores_reached_seq;
-- a delta of 0 keeps the tie (the score was reached before). The draw happens once per
-- statement in the INSERT's SELECT and is only kept when the score changes (gaps are harmless).
-- It does not NOTIFY: wakeup.rs wakes the projectors after the commit (see outbox_wakeup.sql).
-- Repeat: `prior` returns the recorded event and nothing is written. Another revision: one
-- row saying so ('stale_definition'), nothing written; the caller reloads the definition.
-- Moderation (V6, board/moderation.rs): a new entry of a banned user is written hidden and its
-- outbox row asks the projection to hide it ('hide': a tombstone at its version); an entry
-- hidden or not keeps its flag on update (a ban or an unban changes it, under a table lock). A
-- new entry continues the version of a removed one (removed_entries), so it outranks the
-- removal's tombstone in Redis, and starts above the board's last erasure
-- (erased_version_floors, V12), so a returning user outranks the erasure's row. best.sql and latest.sql do the same.
-- Concurrent arrivals of one new event id: the later one's insert into score_events raises
-- unique_violation on score_events_pkey, which aborts its whole statement; the caller retries.
WITH prior AS (
    SELECT board_id, user_id, coalesce(operator, 'add') AS operator,
           coalesce(submitted, delta) AS submitted, metadata::text AS metadata,
           score, version, improved
    FROM score_events
    WHERE event_id = $1
),
definition AS (
    SELECT coalesce((SELECT revision FROM board_definitions WHERE board_id = $2), 0) = $6
        AS current
),
go AS (
    -- The board the command writes: $2 itself, or the period of $2 open now (migration V7's
    -- lb_command_board: it reads the clock under the board's period lock). Only a command that
    -- goes ahead asks, so a repeat or a refusal never waits for a close.
    SELECT lb_command_board($2) AS board_id,
           CASE WHEN $7 = 0 THEN 0 ELSE $7 * nextval('user_scores_reached_seq') END AS tie
    WHERE NOT EXISTS (SELECT 1 FROM prior) AND (SELECT current FROM definition)
),
upserted AS (
    INSERT INTO user_scores AS s (board_id, user_id, score, version, tie, metadata, hidden)
    SELECT go.board_id, $3, $4, 1 + greatest(
               coalesce((SELECT r.version FROM removed_entries r
                         WHERE r.board_id = go.board_id AND r.user_id = $3), 0),
               coalesce((SELECT f.version FROM erased_version_floors f
                         WHERE f.board_id = go.board_id), 0)),
           tie, $10::jsonb, EXISTS (SELECT 1 FROM banned_users b WHERE b.user_id = $3)
    FROM go
    WHERE $4 BETWEEN $8 AND $9
    ON CONFLICT (board_id, user_id) DO UPDATE
        SET score = s.score + EXCLUDED.score,
            version = s.version + 1,
            tie = CASE WHEN EXCLUDED.score = 0 THEN s.tie ELSE EXCLUDED.tie END,
            metadata = coalesce(EXCLUDED.metadata, s.metadata),
            updated_at = now()
        WHERE s.score + EXCLUDED.score BETWEEN $8 AND $9
    RETURNING board_id, score, version, tie, metadata, hidden
),
event AS (
    INSERT INTO score_events
        (event_id, board_id, user_id, delta, submitted, operator, score, version, improved,
         metadata)
    -- delta keeps version 4's statements able to read the event during a rolling upgrade.
    SELECT $1, board_id, $3, CASE WHEN $4 BETWEEN -1000 AND 1000 THEN $4::integer END, $4, 'add',
           score, version, true, $10::jsonb
    FROM upserted
    RETURNING board_id, user_id, operator, submitted, metadata::text AS metadata, score,
              version, improved
),
outbox AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, score_version, traceparent, tie, metadata,
         moderation)
    SELECT $1, board_id, $3, score, version, $5, tie, metadata, CASE WHEN hidden THEN 'hide' END
    FROM upserted
)
-- A data-modifying CTE runs whether or not the answer refers to it.
SELECT 'applied' AS outcome, board_id, user_id, operator, submitted, metadata, score, version,
       improved
FROM event
UNION ALL
SELECT 'duplicate', board_id, user_id, operator, submitted, metadata, score, version, improved
FROM prior
UNION ALL
SELECT 'stale_definition', $2, $3, 'add', $4, NULL, 0, 0, false
WHERE NOT EXISTS (SELECT 1 FROM prior) AND NOT (SELECT current FROM definition)
UNION ALL
-- The sum would leave the board's score bounds: nothing written.
SELECT 'score_out_of_range', $2, $3, 'add', $4, NULL, 0, 0, false
WHERE EXISTS (SELECT 1 FROM go) AND NOT EXISTS (SELECT 1 FROM upserted)
