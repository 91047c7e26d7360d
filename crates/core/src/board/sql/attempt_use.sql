-- A score command's use of its attempt (board/guard/), in the command's transaction: the
-- attempt's row lock, its verdict, and its mark as used by this event id, in one statement. The
-- score's own statement runs after it in the same transaction, so a refusal here (or there)
-- rolls the mark back: nothing is written.
-- $1 attempt id, $2 the command's event id, $3 user id, $4 board id (as sent).
-- Verdicts, in the order they are judged: 'unknown' (no such attempt), 'foreign' (another
-- player's, or another board's), 'repeat' (used by this very event id: a repeat of the
-- command, which its statement answers as such), 'used' (by another score), 'expired' (past its
-- ttl), 'too_fast' (its minimum duration has not passed since it started), 'use' (marked used
-- now). Times by the database clock: clock_timestamp(), not the transaction's start.
WITH a AS (
    SELECT attempt_id, board_id, user_id, period_board, used_by, expires_at,
           started_at + min_duration_ms * interval '1 millisecond' AS ready_at
    FROM attempts
    WHERE attempt_id = $1
    FOR UPDATE
),
verdict AS (
    SELECT CASE
               WHEN user_id <> $3 OR board_id <> $4 THEN 'foreign'
               WHEN used_by = $2 THEN 'repeat'
               WHEN used_by IS NOT NULL THEN 'used'
               WHEN expires_at <= clock_timestamp() THEN 'expired'
               WHEN ready_at > clock_timestamp() THEN 'too_fast'
               ELSE 'use'
           END AS verdict,
           period_board,
           ceil(extract(epoch FROM ready_at - clock_timestamp()) * 1000)::bigint AS wait_ms
    FROM a
),
used AS (
    UPDATE attempts SET used_by = $2, used_at = clock_timestamp()
    WHERE attempt_id = $1 AND (SELECT verdict FROM verdict) = 'use'
    RETURNING attempt_id
)
SELECT coalesce((SELECT verdict FROM verdict), 'unknown') AS verdict,
       (SELECT period_board FROM verdict) AS period_board,
       greatest((SELECT wait_ms FROM verdict), 0) AS wait_ms,
       (SELECT count(*) FROM used) AS used
