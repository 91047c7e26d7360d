-- The members that still have outbox rows waiting to be projected, and the parked rows: the
-- chaos check's drain. A run's outbox is small (one row per accepted command), so a scan of
-- the pending index is fine here; nothing on a request path runs this.
SELECT board_id, user_id, NULL::bigint AS parked
FROM leaderboard_outbox
WHERE published_at IS NULL AND parked_at IS NULL
GROUP BY board_id, user_id
UNION ALL
SELECT NULL, NULL, count(*)
FROM leaderboard_outbox
WHERE parked_at IS NOT NULL
