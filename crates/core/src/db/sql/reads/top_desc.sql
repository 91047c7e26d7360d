-- A page of a descending board by position, in the board's order (score DESC, tie DESC, user_id DESC:
-- user_scores_visible_order read forward, the order of Redis's ZRANGE … REV over the members of
-- projection/member.rs), with what ranking.rs needs to rank it: the board's total (16 rows of
-- board_entry_counts at most), the entries ahead of the first row ($2 itself), the entries
-- with a strictly better score than the first row's, and, when $4, the distinct such scores.
-- The first row has the page's greatest score. One row even for an empty page (then the
-- page columns are NULL), so the total always comes back.
-- $1 board, $2 offset, $3 limit, $4 count distinct better scores (dense ranks).
WITH page AS MATERIALIZED (
    SELECT user_id, score, tie, metadata
    FROM user_scores
    WHERE board_id = $1 AND NOT hidden
    ORDER BY score DESC, tie DESC, user_id DESC
    OFFSET $2
    LIMIT $3),
head AS (SELECT max(score) AS score FROM page)
SELECT (SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1) AS total,
       $2::bigint AS ahead,
       (SELECT count(*) FROM user_scores o, head
        WHERE o.board_id = $1 AND NOT o.hidden AND o.score > head.score) AS better,
       (SELECT count(DISTINCT o.score) FROM user_scores o, head
        WHERE $4 AND o.board_id = $1 AND NOT o.hidden AND o.score > head.score) AS dense_better,
       p.user_id, p.score, p.tie, p.metadata::text AS metadata
FROM (SELECT) AS one
LEFT JOIN page p ON true
ORDER BY p.score DESC, p.tie DESC, p.user_id DESC
