-- Applies one command of a `latest` board in ONE statement: the member's score becomes the
-- submitted one, whatever it was.
-- $1 event_id uuid, $2 board_id text, $3 user_id text, $4 score bigint (already within the
-- board's score bounds), $5 traceparent, $6 definition revision (0: undeclared), $7 tie sign
-- (0: ties by user id), $8 min score, $9 max score (unused here: checked before; kept so every
-- operator's statement takes the same parameters), $10 metadata (JSON text, or NULL: keep the
-- prior).
--
-- Like add.sql (see there for the repeat, the revision check and the races): a submission of
-- the score the member holds is one more version with the same score, and keeps the tie (the
-- score was reached before); any other score draws a new tie on earliest boards.
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
      AND $4 BETWEEN $8 AND $9
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
    ON CONFLICT (board_id, user_id) DO UPDATE
        SET score = EXCLUDED.score,
            version = s.version + 1,
            tie = CASE WHEN EXCLUDED.score = s.score THEN s.tie ELSE EXCLUDED.tie END,
            metadata = coalesce(EXCLUDED.metadata, s.metadata),
            updated_at = now()
    RETURNING board_id, score, version, tie, metadata, hidden
),
event AS (
    INSERT INTO score_events
        (event_id, board_id, user_id, submitted, operator, score, version, improved, metadata)
    SELECT $1, board_id, $3, $4, 'latest', score, version, true, $10::jsonb
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
SELECT 'applied' AS outcome, board_id, user_id, operator, submitted, metadata, score, version,
       improved
FROM event
UNION ALL
SELECT 'duplicate', board_id, user_id, operator, submitted, metadata, score, version, improved
FROM prior
UNION ALL
SELECT 'stale_definition', $2, $3, 'latest', $4, NULL, 0, 0, false
WHERE NOT EXISTS (SELECT 1 FROM prior) AND NOT (SELECT current FROM definition)
