-- Pending rows and parked rows, each counted up to $1 (100,000) index entries, and the age of the
-- oldest pending row by the database clock. Every daemon samples this every few seconds, so
-- its cost must not grow with the backlog: with ten million rows pending an exact count(*)
-- would run for seconds on a connection commands need. The oldest pending row is taken as the
-- lowest pending id (the first entry of the pending index): ids are given out in commit-time
-- order but for commands in flight together, so this is the oldest to within those.
SELECT
    (SELECT count(*) FROM (SELECT id FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NULL ORDER BY id LIMIT $1) p) AS pending,
    (SELECT count(*) FROM (SELECT id FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NOT NULL ORDER BY id LIMIT $1) q) AS parked,
    (SELECT (extract(epoch FROM now() - created_at) * 1000)::bigint FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NULL ORDER BY id LIMIT 1) AS oldest_pending_age_ms
