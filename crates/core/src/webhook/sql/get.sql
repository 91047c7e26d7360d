-- One subscription (core webhook/subscription.rs), never its secret.
SELECT subscription_id, url, kinds, boards, lanes, enabled, start_position, failures,
       CASE WHEN circuit_open_until IS NULL THEN 'closed'
            WHEN circuit_open_until > now() THEN 'open' ELSE 'half_open' END AS circuit,
       to_char(circuit_open_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS circuit_open_until,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
       to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
FROM webhook_subscriptions
WHERE subscription_id = $1
