-- Members of an ascending board by user id, each with where it stands: entries ahead of it
-- (its position - 1), entries with a strictly better score, and, when $3, the distinct such
-- scores; in the board's order (score, tie, user_id). Each count reads the entries ahead of the
-- member in user_scores_visible_order (index-only). One row of NULLs when none of the ids is on the
-- board, so the total always comes back.
-- $1 board, $2 user ids, $3 count distinct better scores (dense ranks).
SELECT (SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1) AS total,
       s.user_id, s.score, s.tie, s.version, s.metadata::text AS metadata,
       (SELECT count(*) FROM user_scores o
        WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.tie, o.user_id) < (s.score, s.tie, s.user_id)) AS ahead,
       (SELECT count(*) FROM user_scores o
        WHERE o.board_id = $1 AND NOT o.hidden AND o.score < s.score) AS better,
       (SELECT count(DISTINCT o.score) FROM user_scores o
        WHERE $3 AND o.board_id = $1 AND NOT o.hidden AND o.score < s.score) AS dense_better
FROM (SELECT) AS one
LEFT JOIN user_scores s ON s.board_id = $1 AND NOT s.hidden AND s.user_id = ANY ($2)
ORDER BY s.score, s.tie, s.user_id
