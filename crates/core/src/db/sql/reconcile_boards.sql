-- Every board with source rows, without reading every row: a loose index scan that jumps
-- from one board_id to the next in the primary key.
WITH RECURSIVE boards AS (
    (SELECT board_id FROM user_scores ORDER BY board_id LIMIT 1)
    UNION ALL
    SELECT (SELECT s.board_id FROM user_scores s
            WHERE s.board_id > b.board_id
            ORDER BY s.board_id LIMIT 1)
    FROM boards b
    WHERE b.board_id IS NOT NULL
)
SELECT board_id FROM boards WHERE board_id IS NOT NULL
