-- Pending rows (served by the partial index), parked rows, and the age of the oldest pending
-- row by the database clock.
SELECT
    (SELECT count(*) FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NULL) AS pending,
    (SELECT count(*) FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NOT NULL) AS parked,
    (SELECT (extract(epoch FROM now() - min(created_at)) * 1000)::bigint FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NULL) AS oldest_pending_age_ms
