-- A member of a descending board and up to $3 entries on each side of it, in the board's order
-- (score DESC, tie DESC, user_id DESC), as one statement: one snapshot. Columns as top_desc.sql; `ahead` (entries
-- ahead of the first row) is the member's own count of entries ahead minus the rows above it on
-- the page. No rows but the one of NULLs when the member is not on the board.
-- $1 board, $2 user id, $3 radius, $4 count distinct better scores (dense ranks).
WITH me AS (
    SELECT user_id, score, tie, metadata FROM user_scores WHERE board_id = $1 AND NOT hidden AND user_id = $2),
above AS (
    SELECT o.user_id, o.score, o.tie, o.metadata
    FROM user_scores o, me
    WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.tie, o.user_id) > (me.score, me.tie, me.user_id)
    ORDER BY o.score, o.tie, o.user_id
    LIMIT $3),
below AS (
    SELECT o.user_id, o.score, o.tie, o.metadata
    FROM user_scores o, me
    WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.tie, o.user_id) < (me.score, me.tie, me.user_id)
    ORDER BY o.score DESC, o.tie DESC, o.user_id DESC
    LIMIT $3),
page AS MATERIALIZED (
    SELECT user_id, score, tie, metadata FROM above
    UNION ALL SELECT user_id, score, tie, metadata FROM me
    UNION ALL SELECT user_id, score, tie, metadata FROM below),
head AS (SELECT max(score) AS score FROM page)
SELECT (SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1) AS total,
       (SELECT count(*) FROM user_scores o, me
        WHERE o.board_id = $1 AND NOT o.hidden AND (o.score, o.tie, o.user_id) > (me.score, me.tie, me.user_id))
         - (SELECT count(*) FROM above) AS ahead,
       (SELECT count(*) FROM user_scores o, head
        WHERE o.board_id = $1 AND NOT o.hidden AND o.score > head.score) AS better,
       (SELECT count(DISTINCT o.score) FROM user_scores o, head
        WHERE $4 AND o.board_id = $1 AND NOT o.hidden AND o.score > head.score) AS dense_better,
       p.user_id, p.score, p.tie, p.metadata::text AS metadata
FROM (SELECT) AS one
LEFT JOIN page p ON true
ORDER BY p.score DESC, p.tie DESC, p.user_id DESC
