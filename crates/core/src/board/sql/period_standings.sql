-- A page of a closed period's frozen standings, by position, after the last position of the
-- previous page: the primary key serves it, whatever the period's size.
-- $1 board id, $2 period id, $3 the last position of the previous page (0 for the first),
-- $4 page size.
SELECT position, rank, dense, user_id, score, tie, version, metadata::text AS metadata
FROM period_standings
WHERE board_id = $1 AND period = $2 AND position > $3
ORDER BY position
LIMIT $4
