-- The period a board's score would land in now (lb_command_board, migration V7): an approval
-- applies a held score only while the period it was held in is still open. $1 board id.
SELECT lb_command_board($1) AS period_board
