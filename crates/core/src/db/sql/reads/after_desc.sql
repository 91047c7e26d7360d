-- A cursor page of a descending board: the rows just after the cursor ($2 score, $3 tie,
-- $4 user id) in the board's order (score DESC, tie DESC, user_id DESC), found by a row comparison on
-- user_scores_visible_order (read forward), so the page costs its own rows however deep it is. The cursor's
-- row need not exist any more. Columns as top_desc.sql; `ahead` (entries ahead of the first row =
-- entries at or ahead of the cursor) is a count of those entries, index-only.
-- $1 board, $2 score, $3 tie, $4 user id, $5 limit, $6 count distinct better scores (dense ranks).
WITH page AS MATERIALIZED (
    SELECT user_id, score, tie, metadata
    FROM user_scores
    WHERE board_id = $1 AND NOT hidden AND (score, tie, user_id) < ($2, $3, $4)
    ORDER BY score DESC, tie DESC, user_id DESC
    LIMIT $5),
head AS (SELECT max(score) AS score FROM page)
SELECT (SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1) AS total,
       (SELECT count(*) FROM user_scores o
        WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.tie, o.user_id) >= ($2, $3, $4)) AS ahead,
       (SELECT count(*) FROM user_scores o, head
        WHERE o.board_id = $1 AND NOT o.hidden AND o.score > head.score) AS better,
       (SELECT count(DISTINCT o.score) FROM user_scores o, head
        WHERE $6 AND o.board_id = $1 AND NOT o.hidden AND o.score > head.score) AS dense_better,
       p.user_id, p.score, p.tie, p.metadata::text AS metadata
FROM (SELECT) AS one
LEFT JOIN page p ON true
ORDER BY p.score DESC, p.tie DESC, p.user_id DESC
