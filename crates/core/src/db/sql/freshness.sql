-- How far behind the projection is, from the partial indexes alone: rows waiting, the age of
-- the oldest (database clock), the lowest id not yet published (pending or parked), and the id
-- sequence's last value for when nothing waits (0 before the first command).
SELECT
    (SELECT count(*) FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NULL) AS pending,
    (SELECT (extract(epoch FROM now() - min(created_at)) * 1000)::bigint FROM leaderboard_outbox
      WHERE published_at IS NULL AND parked_at IS NULL) AS lag_ms,
    least(
        (SELECT min(id) FROM leaderboard_outbox
          WHERE published_at IS NULL AND parked_at IS NULL),
        (SELECT min(id) FROM leaderboard_outbox
          WHERE parked_at IS NOT NULL AND published_at IS NULL)) AS lowest_unpublished,
    (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM leaderboard_outbox_id_seq) AS last_id
