-- Starts one attempt (board/guard/attempt.rs), once per request key of the player on the board,
-- and decides the player's cap per period in the same statement: the upsert on the player's
-- attempt_counts row takes its row lock, so concurrent starts count one after the other and
-- the cap is never passed (never read-then-write).
-- $1 the new attempt id (uuid, drawn by the caller), $2 board id (as sent), $3 user id,
-- $4 request key, $5 ttl in seconds, $6 the most attempts per period (NULL: no cap),
-- $7 min duration in ms, $8 the definition revision the caller judged against.
-- Answers one row: 'created' or 'repeat' (the attempt of an earlier request with this key), or
-- 'limit' (the cap is reached: nothing written), or 'stale_definition' (nothing written; the
-- caller reloads the definition).
-- Concurrent arrivals of one new request key: the later insert raises unique_violation on
-- attempts_request, which aborts its statement (its count too); the caller runs it again and
-- finds the first as a repeat.
WITH prior AS (
    SELECT attempt_id, period_board, started_at, expires_at, min_duration_ms
    FROM attempts
    WHERE board_id = $2 AND user_id = $3 AND request_key = $4
),
definition AS (
    SELECT coalesce((SELECT revision FROM board_definitions WHERE board_id = $2), 0) = $8
        AS current
),
period AS (
    -- The period open now (lb_command_board, migration V7): the one the attempt's score must
    -- land in.
    SELECT lb_command_board($2) AS board
    WHERE NOT EXISTS (SELECT 1 FROM prior) AND (SELECT current FROM definition)
),
counted AS (
    INSERT INTO attempt_counts AS c (period_board, user_id, started)
    SELECT board, $3, 1 FROM period
    ON CONFLICT (period_board, user_id) DO UPDATE
        SET started = c.started + 1
        WHERE $6::integer IS NULL OR c.started < $6::integer
    RETURNING period_board
),
made AS (
    INSERT INTO attempts
        (attempt_id, board_id, period_board, user_id, request_key, expires_at, min_duration_ms)
    SELECT $1, $2, period_board, $3, $4, now() + $5::integer * interval '1 second', $7
    FROM counted
    RETURNING attempt_id, period_board, started_at, expires_at, min_duration_ms
),
answer AS (
    SELECT 'created' AS outcome, attempt_id, period_board, started_at, expires_at,
           min_duration_ms
    FROM made
    UNION ALL
    SELECT 'repeat', attempt_id, period_board, started_at, expires_at, min_duration_ms
    FROM prior
    UNION ALL
    SELECT 'stale_definition', NULL, NULL, NULL, NULL, NULL
    WHERE NOT EXISTS (SELECT 1 FROM prior) AND NOT (SELECT current FROM definition)
    UNION ALL
    SELECT 'limit', NULL, NULL, NULL, NULL, NULL
    WHERE EXISTS (SELECT 1 FROM period) AND NOT EXISTS (SELECT 1 FROM counted)
)
SELECT outcome, attempt_id, period_board,
       to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS started_at,
       to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS expires_at,
       min_duration_ms
FROM answer
