-- The dispatcher's claim of requeued parked deliveries (core webhook/parked.rs): up to $3, oldest
-- requeue first, of enabled subscriptions whose circuit is not open, leased to the claim $1 for
-- $2 ms (FOR UPDATE SKIP LOCKED, as lanes are).
WITH due AS (
    SELECT p.subscription_id, p.position
    FROM webhook_parked p
    JOIN webhook_subscriptions s USING (subscription_id)
    WHERE p.requeued_at IS NOT NULL
      AND (p.lease_until IS NULL OR p.lease_until < now())
      AND s.enabled
      AND (s.circuit_open_until IS NULL OR s.circuit_open_until <= now())
    ORDER BY p.requeued_at
    LIMIT $3
    FOR UPDATE OF p SKIP LOCKED
)
UPDATE webhook_parked p
SET lease_holder = $1, lease_until = now() + $2 * interval '1 millisecond'
FROM due, webhook_subscriptions s
WHERE p.subscription_id = due.subscription_id AND p.position = due.position
  AND s.subscription_id = p.subscription_id
RETURNING p.subscription_id, p.position, p.event_id, p.kind, p.board_id, p.body, p.attempts,
          s.url, s.secret
