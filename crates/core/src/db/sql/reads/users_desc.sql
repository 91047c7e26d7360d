-- Members of a descending board by user id, each with where it stands: entries ahead of it (its
-- position - 1), entries with a strictly better tuple, and, when $3, the distinct such tuples;
-- in the board's order. Each count reads the entries ahead of the member in the index
-- (index-only). One row of NULLs when none of the ids is on the board, so the total always
-- comes back.
-- The board's order is (score, col2, col3, tie, user_id), greater first: the other
-- columns in order-key form (model/order.rs), 0 on a one-column board. It is
-- user_scores_visible_rank read forward, the order of Redis's ZRANGE … REV over the members of
-- projection/member.rs. "Better" is by the tuple (score, col2, col3): competition and dense
-- ranks share a rank between entries of equal tuples, whatever their ties. Distinct tuples are
-- counted by grouping the index-only walk, which comes in index order (no sort, unlike
-- count(DISTINCT …): 133 ms against 200 ms over 500,000 entries of one column, 1.1 s with
-- three).
-- $1 board, $2 user ids, $3 count distinct better tuples (dense ranks).
SELECT (SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1) AS total,
       s.user_id, s.score, s.columns, s.col2, s.col3, s.tie, s.version, s.metadata::text AS metadata,
       (SELECT count(*) FROM user_scores o
        WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.col2, o.col3, o.tie, o.user_id) > (s.score, s.col2, s.col3, s.tie, s.user_id)) AS ahead,
       (SELECT count(*) FROM user_scores o
        WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.col2, o.col3) > (s.score, s.col2, s.col3)) AS better,
       (SELECT count(*) FROM (
            SELECT 1 FROM user_scores o
            WHERE $3 AND o.board_id = $1 AND NOT o.hidden
              AND (o.score, o.col2, o.col3) > (s.score, s.col2, s.col3)
            GROUP BY o.score, o.col2, o.col3) d) AS dense_better
FROM (SELECT) AS one
LEFT JOIN user_scores s ON s.board_id = $1 AND NOT s.hidden AND s.user_id = ANY ($2)
ORDER BY s.score DESC, s.col2 DESC, s.col3 DESC, s.tie DESC, s.user_id DESC
