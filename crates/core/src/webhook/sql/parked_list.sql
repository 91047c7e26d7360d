-- A page of one subscription's parked deliveries in position order after $2, at most $3.
SELECT position, event_id, kind, board_id, attempts, last_error,
       to_char(parked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS parked_at,
       to_char(requeued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS requeued_at
FROM webhook_parked
WHERE subscription_id = $1 AND position > $2
ORDER BY position
LIMIT $3
