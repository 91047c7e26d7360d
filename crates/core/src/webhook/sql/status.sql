-- What the dispatcher's gauges sample (core webhook/status.rs): parked and requeued deliveries,
-- subscriptions by circuit state, gaps, and how far the furthest-behind lane of an enabled
-- subscription is from the log's last position.
WITH head AS (
    -- As events/sql/bounds.sql reads it: retention may have deleted every event.
    SELECT greatest(coalesce((SELECT position FROM events ORDER BY position DESC LIMIT 1), 0),
                    (SELECT swept_through FROM event_retention)) AS position
)
SELECT (SELECT count(*) FROM webhook_parked) AS parked,
       (SELECT count(*) FROM webhook_parked WHERE requeued_at IS NOT NULL) AS requeued,
       count(*) FILTER (WHERE enabled AND circuit_open_until IS NULL) AS closed,
       count(*) FILTER (WHERE enabled AND circuit_open_until > now()) AS open,
       count(*) FILTER (WHERE enabled AND circuit_open_until <= now()) AS half_open,
       count(*) FILTER (WHERE NOT enabled) AS disabled,
       (SELECT count(*) FROM webhook_gaps) AS gaps,
       greatest((SELECT position FROM head) - coalesce(
           (SELECT min(l.position) FROM webhook_lanes l
            JOIN webhook_subscriptions e USING (subscription_id) WHERE e.enabled),
           (SELECT position FROM head)), 0) AS behind
FROM webhook_subscriptions
