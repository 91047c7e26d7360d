-- Retention: deletes up to $2 of the oldest events written more than $1 hours ago, and
-- remembers the greatest position deleted (a feed cursor at or below it has lost events:
-- 410 cursor_expired). Walks the log from its start by position (the primary key), so each
-- call reads what it deletes.
--
-- Webhooks hold it back: an event past the lowest lane position of an enabled subscription
-- (core webhook/, migration V20) is one a receiver has not had yet, and is kept until it is
-- $3 hours old (events.webhook_hold_hours), so that a receiver down for a while loses nothing.
-- Past that it goes too, and the lane records the loss (webhook_gaps) when it reads on.
WITH hold AS (
    SELECT min(l.position) AS position
    FROM webhook_lanes l
    JOIN webhook_subscriptions s USING (subscription_id)
    WHERE s.enabled
),
gone AS (
    DELETE FROM events
    WHERE position IN (
        SELECT position
        FROM (SELECT position, occurred_at FROM events ORDER BY position LIMIT $2) o
        WHERE o.occurred_at < now() - make_interval(hours => $1)
          AND (o.position <= coalesce((SELECT position FROM hold), o.position)
               OR o.occurred_at < now() - make_interval(hours => $3))
    )
    RETURNING position
),
mark AS (
    UPDATE event_retention SET swept_through = greatest(swept_through, (SELECT max(position) FROM gone))
    WHERE EXISTS (SELECT 1 FROM gone)
)
SELECT count(*) AS deleted FROM gone
