-- Applies one score command in ONE statement (one round trip, one implicit transaction).
-- $1 event_id uuid, $2 board_id text, $3 user_id text, $4 delta integer,
-- $5 traceparent text (the request's W3C trace context, or NULL).
--
-- First arrival: `prior` is empty, so the score is upserted (the row lock serializes
-- concurrent commands for one user: no lost update), the event is recorded with the score and
-- version it produced, and the outbox row carries them to the projection.
-- It does not NOTIFY: wakeup.rs wakes the projectors after the commit (see outbox_wakeup.sql).
-- Repeat: `prior` returns the recorded event and nothing is written.
-- Concurrent arrivals of one new event id: both see no prior row; the later one's insert into
-- score_events raises unique_violation on score_events_pkey, which aborts its whole statement
-- (its upsert included). The caller retries and then finds the prior row.
WITH prior AS (
    SELECT board_id, user_id, delta, score, version
    FROM score_events
    WHERE event_id = $1
),
upserted AS (
    INSERT INTO user_scores AS s (board_id, user_id, score, version)
    SELECT $2, $3, $4, 1
    WHERE NOT EXISTS (SELECT 1 FROM prior)
    ON CONFLICT (board_id, user_id) DO UPDATE
        SET score = s.score + EXCLUDED.score,
            version = s.version + 1,
            updated_at = now()
    RETURNING score, version
),
event AS (
    INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
    SELECT $1, $2, $3, $4, score, version FROM upserted
    RETURNING board_id, user_id, delta, score, version
),
outbox AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, score_version, traceparent)
    SELECT $1, board_id, user_id, score, version, $5 FROM event
)
-- A data-modifying CTE runs whether or not the answer refers to it.
SELECT false AS duplicate, board_id, user_id, delta, score, version FROM event
UNION ALL
SELECT true AS duplicate, board_id, user_id, delta, score, version FROM prior
