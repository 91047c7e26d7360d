-- A requeued parked delivery failed again: parked again, with one more attempt and its error,
-- until the next requeue (while the claim $3 holds it).
UPDATE webhook_parked
SET requeued_at = NULL, attempts = attempts + 1, last_error = $4,
    lease_holder = NULL, lease_until = NULL, parked_at = now()
WHERE subscription_id = $1 AND position = $2 AND lease_holder = $3
