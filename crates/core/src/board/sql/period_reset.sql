-- A manual reset: the board's next period opens at the next whole second by the database
-- clock, so every command that committed before the reset was asked for stays in the period it
-- landed in, and each command after the boundary reads a clock past it (lb_command_board).
-- Two resets within one second open one period (the primary key): a repeat is harmless.
-- No row for a board that never resets (or is undeclared).
-- $1 board id, $2 actor (the token's name, or lbctl's --actor).
WITH d AS (
    SELECT board_id, date_trunc('second', clock_timestamp()) + interval '1 second' AS starts_at
    FROM board_definitions
    WHERE board_id = $1 AND reset <> 'never'
),
opened AS (
    INSERT INTO board_resets (board_id, starts_at, actor)
    SELECT board_id, starts_at, $2 FROM d
    ON CONFLICT (board_id, starts_at) DO NOTHING
    RETURNING starts_at
)
SELECT lb_period_id(starts_at) AS period, EXISTS (SELECT 1 FROM opened) AS opened FROM d
