-- Retention's losses of one subscription, newest first (at most 100).
SELECT lane, after_position, through_position,
       to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at
FROM webhook_gaps
WHERE subscription_id = $1
ORDER BY recorded_at DESC, lane
LIMIT 100
