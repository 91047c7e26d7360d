-- A page of a closed period's frozen standings, by position, after the last position of the
-- previous page: the primary key serves it, whatever the period's size. With each row, the
-- columns the close ranked by (the other columns are stored in order-key form).
-- $1 board id, $2 period id, $3 the last position of the previous page (0 for the first),
-- $4 page size.
SELECT position, rank, dense, user_id, score, columns, col2, col3, tie, version,
       metadata::text AS metadata,
       (SELECT c.columns::text FROM period_closes c
        WHERE c.board_id = $1 AND c.period = $2) AS defined
FROM period_standings
WHERE board_id = $1 AND period = $2 AND position > $3
ORDER BY position
LIMIT $4
