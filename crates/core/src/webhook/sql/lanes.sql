-- Each lane's progress of one subscription, in lane order; the holder only while its lease runs.
SELECT lane, position, attempts,
       to_char(next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS next_attempt_at,
       last_error,
       CASE WHEN lease_until > now() THEN lease_holder END AS lease_holder
FROM webhook_lanes
WHERE subscription_id = $1
ORDER BY lane
