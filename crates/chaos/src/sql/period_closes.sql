-- Every closed period (board, period id), for the chaos check of the one pass's closes.
SELECT board_id, period
FROM period_closes
