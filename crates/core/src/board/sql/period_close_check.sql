-- Before a close (board/periods.rs `close`): the board's order (and its columns), whether the period has ended by
-- the database clock (a later period is open now), and whether it is closed already. No row for
-- a board that never resets.
-- $1 board id, $2 period id.
SELECT d.sort, d.tie_break, d.columns::text AS columns,
       lb_period_id(lb_period_start($1, d.reset, d.time_zone, clock_timestamp())) > $2 AS ended,
       EXISTS (SELECT 1 FROM period_closes c WHERE c.board_id = $1 AND c.period = $2) AS closed
FROM board_definitions d
WHERE d.board_id = $1 AND d.reset <> 'never'
