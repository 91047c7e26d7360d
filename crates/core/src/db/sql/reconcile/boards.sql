-- Up to $3 boards with source rows, in byte order, after $1 and, unless $2 is NULL, up to and
-- including $2: one page of the reconciler's walk over boards. A loose index scan that jumps
-- from one board_id to the next in the primary key, so a page costs $3 index probes whatever
-- the boards' sizes, and no list of every board is ever built.
WITH RECURSIVE boards AS (
    (SELECT board_id, 1 AS n FROM user_scores WHERE board_id > $1 ORDER BY board_id LIMIT 1)
    UNION ALL
    SELECT (SELECT s.board_id FROM user_scores s
            WHERE s.board_id > b.board_id
            ORDER BY s.board_id LIMIT 1),
           b.n + 1
    FROM boards b
    WHERE b.board_id IS NOT NULL
      AND b.n < $3
      AND ($2::text IS NULL OR b.board_id < $2)
)
-- Archived periods (V8) are listed with a flag, not left out: the walk pages on by the last id
-- listed, so a page of archived periods must not look like the end of the boards.
SELECT board_id, lb_period_archived(board_id) AS archived FROM boards
WHERE board_id IS NOT NULL
  AND ($2::text IS NULL OR board_id <= $2)
