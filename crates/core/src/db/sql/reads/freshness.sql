-- How far behind one board's projection is, from V4's per-board partial indexes: each part
-- reads at most $2 index entries (or one), whatever the size of the backlog, so the cost of
-- stating freshness does not grow with the number of pending rows.
--   pending      the board's rows waiting to be projected (retries included), counted up to $2
--   lag_ms       age of the board's oldest pending row (database clock); NULL when none
--   parked       the board's parked rows, counted up to $2
--   lowest_unpublished / last_id: the lowest id not yet published (any board), from the first
--                entries of the pending and parked indexes, and the id sequence's last value
-- $1 board id, $2 count cap
SELECT
    -- ORDER BY the index's own order: the planner then walks leaderboard_outbox_pending_board
    -- rather than a heap scan that could read every row before it found $2 of this board's.
    (SELECT count(*) FROM (SELECT created_at FROM leaderboard_outbox
      WHERE board_id = $1 AND published_at IS NULL AND parked_at IS NULL
      ORDER BY created_at LIMIT $2) p) AS pending,
    (SELECT (extract(epoch FROM now() - created_at) * 1000)::bigint FROM leaderboard_outbox
      WHERE board_id = $1 AND published_at IS NULL AND parked_at IS NULL
      ORDER BY created_at LIMIT 1) AS lag_ms,
    (SELECT count(*) FROM (SELECT 1 FROM leaderboard_outbox
      WHERE board_id = $1 AND parked_at IS NOT NULL AND published_at IS NULL LIMIT $2) q) AS parked,
    least(
        (SELECT id FROM leaderboard_outbox
          WHERE published_at IS NULL AND parked_at IS NULL ORDER BY id LIMIT 1),
        (SELECT id FROM leaderboard_outbox
          WHERE parked_at IS NOT NULL AND published_at IS NULL ORDER BY id LIMIT 1)) AS lowest_unpublished,
    (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM leaderboard_outbox_id_seq) AS last_id
