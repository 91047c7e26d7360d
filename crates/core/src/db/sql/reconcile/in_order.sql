-- Every visible source row of a board in the board's order (best first), for a rebuild: bound
-- once to a portal and fetched a chunk at a time (source.rs, `scan_in_order`), so every row is
-- read exactly once, from the snapshot the portal started with, however its score moves while
-- the build runs. $1 board.
--
-- Why this order and not the primary key's: Redis inserts a member into its sorted set at its
-- score's place, and members arriving in score order are inserted next to the one before
-- (its path through the skip list is in the CPU's cache) where members in user-id order land
-- at random places among up to millions: 1.0-1.3 s against 2.8-3.8 s of Redis's one thread for
-- ZADD of 1M members in chunks of 500 (2026-12-06, an EVAL loop on this machine's Redis 7).
-- Redis's thread is what a rebuild waits on; PostgreSQL reads in parallel with it.
--
-- The planner walks user_scores_visible_rank (V14, the order every read walks) for a large
-- board and sorts a small one in memory (EXPLAIN, 2026-12-06: an index scan with no sort for
-- a board of 1M rows, a sort for one of 10,000 or 20,000); either way the rows come in order.
SELECT user_id, score, version, columns, col2, col3, tie, metadata::text AS metadata
FROM user_scores
WHERE board_id = $1
  AND NOT hidden
ORDER BY score DESC, col2 DESC, col3 DESC, tie DESC, user_id DESC
