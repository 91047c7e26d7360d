-- A page of declared boards in board id order (byte order: board_id is COLLATE "C"), after
-- the last board of the previous page: the primary key serves it, whatever the table's size.
-- Undeclared boards are not listed (they have no row; finding them would mean scanning
-- user_scores).
-- $1 the last board id of the previous page ('' for the first page), $2 page size.
SELECT board_id, display_name, operator, sort, tie_break, min_score, max_score, min_delta,
       max_delta, reset, time_zone, columns::text AS columns, feeds,
       write_policy, attempts::text AS attempts, review::text AS review, revision
FROM board_definitions
WHERE board_id > $1
ORDER BY board_id
LIMIT $2
