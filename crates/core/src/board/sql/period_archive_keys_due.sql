-- Archived periods whose Redis keys are still there, archived longer ago than the grace ($1, an
-- interval: longer than any api caches a board's periods), oldest first, at most $2: their
-- stored board ids.
-- $1 grace, $2 limit.
SELECT board_id || '~' || period
FROM period_closes c
WHERE keys_dropped_at IS NULL AND archived_at < now() - $1::interval
  -- A row still on its way to the period's keys (a moderation that committed as the period was
  -- archived) would write them back after the drop: the drop waits for it. One probe of the
  -- pending index per period.
  AND NOT EXISTS (SELECT 1 FROM leaderboard_outbox o
                  WHERE o.board_id = c.board_id || '~' || c.period
                    AND o.published_at IS NULL AND o.parked_at IS NULL)
ORDER BY archived_at
LIMIT $2
