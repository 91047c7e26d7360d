-- The member's row, locked, and whether the command goes ahead: after head.sql and the guards
-- (guards.sql or unguarded.sql), before the operator's part.
held AS (
    -- The member's tuple before this command, locked (the event log's previous tuple,
    -- tail.sql's `logged`): FOR UPDATE waits for a concurrent command for the member and
    -- then reads the version it committed, so the upsert below writes on top of exactly this
    -- tuple. (A member's first row inserted concurrently is not there to lock: tail.sql
    -- raises a serialization failure and the command runs again.)
    SELECT score, col2, col3, version FROM user_scores
    WHERE board_id = (SELECT board_id FROM period) AND user_id = $3
      AND (SELECT why FROM barred) IS NULL
    FOR UPDATE
),
go AS (
    SELECT period.board_id,
           CASE WHEN $7 = 0 THEN 0 ELSE $7 * nextval('user_scores_reached_seq') END AS tie
    FROM period LEFT JOIN held ON true
    WHERE (SELECT why FROM barred) IS NULL
