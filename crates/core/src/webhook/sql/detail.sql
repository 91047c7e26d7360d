-- What GET /v1/webhooks/{id} and `lbctl webhook show` add to a subscription: the log's last
-- position, its parked and requeued deliveries.
SELECT greatest(coalesce((SELECT position FROM events ORDER BY position DESC LIMIT 1), 0),
                (SELECT swept_through FROM event_retention)) AS head,
       (SELECT count(*) FROM webhook_parked WHERE subscription_id = $1) AS parked,
       (SELECT count(*) FROM webhook_parked
        WHERE subscription_id = $1 AND requeued_at IS NOT NULL) AS requeued
