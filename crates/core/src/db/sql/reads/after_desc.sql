-- A cursor page of a descending board: the rows just after the cursor ($2 score, $3 col2, $4 col3,
-- $5 tie, $6 user id) in the board's order, found by a row comparison on the index, so the page
-- costs its own rows however deep it is. The cursor's row need not exist any more. Columns as
-- top_desc.sql; `ahead` (entries ahead of the first row = entries at or ahead of the
-- cursor) is a count of those entries, index-only.
-- The board's order is (score, col2, col3, tie, user_id), greater first: the other
-- columns in order-key form (model/order.rs), 0 on a one-column board. It is
-- user_scores_visible_rank read forward, the order of Redis's ZRANGE … REV over the members of
-- projection/member.rs. "Better" is by the tuple (score, col2, col3): competition and dense
-- ranks share a rank between entries of equal tuples, whatever their ties. Distinct tuples are
-- counted by grouping the index-only walk, which comes in index order (no sort, unlike
-- count(DISTINCT …): 133 ms against 200 ms over 500,000 entries of one column, 1.1 s with
-- three).
-- $1 board, $2 score, $3 col2, $4 col3, $5 tie, $6 user id, $7 limit, $8 count distinct better
-- tuples (dense ranks).
WITH page AS MATERIALIZED (
    SELECT user_id, score, columns, col2, col3, tie, metadata
    FROM user_scores
    WHERE board_id = $1 AND NOT hidden AND (score, col2, col3, tie, user_id) < ($2, $3, $4, $5, $6)
    ORDER BY score DESC, col2 DESC, col3 DESC, tie DESC, user_id DESC
    LIMIT $7),
head AS (SELECT score, col2, col3 FROM page ORDER BY score DESC, col2 DESC, col3 DESC LIMIT 1)
SELECT (SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1) AS total,
       (SELECT count(*) FROM user_scores o
        WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.col2, o.col3, o.tie, o.user_id) >= ($2, $3, $4, $5, $6)) AS ahead,
       (SELECT count(*) FROM user_scores o, head
        WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.col2, o.col3) > (head.score, head.col2, head.col3)) AS better,
       (SELECT count(*) FROM (
            SELECT 1 FROM user_scores o, head
            WHERE $8 AND o.board_id = $1 AND NOT o.hidden
              AND (o.score, o.col2, o.col3) > (head.score, head.col2, head.col3)
            GROUP BY o.score, o.col2, o.col3) d) AS dense_better,
       p.user_id, p.score, p.columns, p.col2, p.col3, p.tie, p.metadata::text AS metadata
FROM (SELECT) AS one
LEFT JOIN page p ON true
ORDER BY p.score DESC, p.col2 DESC, p.col3 DESC, p.tie DESC, p.user_id DESC
