-- Retention: deletes up to $2 of the oldest events written more than $1 hours ago, and
-- remembers the greatest position deleted (a feed cursor at or below it has lost events:
-- 410 cursor_expired). Walks the log from its start by position (the primary key), so each
-- call reads what it deletes.
WITH gone AS (
    DELETE FROM events
    WHERE position IN (
        SELECT position
        FROM (SELECT position, occurred_at FROM events ORDER BY position LIMIT $2) o
        WHERE o.occurred_at < now() - make_interval(hours => $1)
    )
    RETURNING position
),
mark AS (
    UPDATE event_retention SET swept_through = greatest(swept_through, (SELECT max(position) FROM gone))
    WHERE EXISTS (SELECT 1 FROM gone)
)
SELECT count(*) AS deleted FROM gone
