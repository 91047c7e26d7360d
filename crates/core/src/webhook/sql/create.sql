-- Creates a subscription and its lanes in one statement (core webhook/subscription.rs). Every
-- lane starts at the log's last position: the subscription receives the events sequenced after
-- it (a position committed after this snapshot is greater, events/sequence.rs).
-- Parameters: id, url, kinds, boards, secret, lanes, enabled.
WITH head AS (
    -- As events/sql/bounds.sql reads it: retention may have deleted every event.
    SELECT greatest(coalesce((SELECT position FROM events ORDER BY position DESC LIMIT 1), 0),
                    (SELECT swept_through FROM event_retention)) AS position
),
sub AS (
    INSERT INTO webhook_subscriptions
        (subscription_id, url, kinds, boards, secret, lanes, enabled, start_position)
    SELECT $1, $2, $3, $4, $5, $6, $7, head.position FROM head
    RETURNING *
),
lanes AS (
    INSERT INTO webhook_lanes (subscription_id, lane, position)
    SELECT sub.subscription_id, g, sub.start_position
    FROM sub, generate_series(0, sub.lanes - 1) AS g
)
SELECT subscription_id, url, kinds, boards, lanes, enabled, start_position, failures,
       CASE WHEN circuit_open_until IS NULL THEN 'closed'
            WHEN circuit_open_until > now() THEN 'open' ELSE 'half_open' END AS circuit,
       to_char(circuit_open_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS circuit_open_until,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
       to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
FROM sub
