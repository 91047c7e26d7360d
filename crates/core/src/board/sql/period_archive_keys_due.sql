-- Archived periods whose Redis keys are still there, archived longer ago than the grace ($1, an
-- interval: longer than any api caches a board's periods), oldest first, at most $2: their
-- stored board ids.
-- $1 grace, $2 limit.
SELECT board_id || '~' || period
FROM period_closes
WHERE keys_dropped_at IS NULL AND archived_at < now() - $1::interval
ORDER BY archived_at
LIMIT $2
