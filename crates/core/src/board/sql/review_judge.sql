-- What a guarded score command's review rules are judged on (board/guard/review.rs), in its
-- transaction: whether the event id was applied before (then nothing is judged: its statement
-- answers the repeat), the period open now, the player's standing entry there (locked: the
-- score statement that may follow updates it; a concurrent command of the player waits), and,
-- when the board counts them ($4), this command's number in the player's current minute on
-- the board (one row per player and board, its minute replaced as minutes pass).
-- $1 board id (as sent), $2 user id, $3 event id, $4 whether to count the minute.
WITH prior AS (
    SELECT 1 FROM score_events WHERE event_id = $3
),
period AS (
    SELECT lb_command_board($1) AS board
    WHERE NOT EXISTS (SELECT 1 FROM prior)
),
standing AS (
    SELECT s.score, s.col2, s.col3, s.version
    FROM user_scores s JOIN period p ON s.board_id = p.board
    WHERE s.user_id = $2
    FOR UPDATE OF s
),
minute AS (
    INSERT INTO submission_minutes AS m (board_id, user_id, minute, n)
    SELECT $1, $2, date_trunc('minute', clock_timestamp()), 1 FROM period WHERE $4
    ON CONFLICT (board_id, user_id) DO UPDATE
        SET n = CASE WHEN m.minute = EXCLUDED.minute THEN m.n + 1 ELSE 1 END,
            minute = EXCLUDED.minute
    RETURNING n
)
SELECT EXISTS (SELECT 1 FROM prior) AS repeat,
       (SELECT board FROM period) AS period_board,
       (SELECT score FROM standing) AS score,
       (SELECT col2 FROM standing) AS col2,
       (SELECT col3 FROM standing) AS col3,
       (SELECT version FROM standing) AS version,
       (SELECT n FROM minute) AS this_minute
