-- Gives a lane back while the claim $3 holds it (caught up, its turn over, or the dispatcher
-- stopping): another claim may take it at once. Its next_attempt_at becomes now, so it waits
-- behind the lanes that were due before it.
UPDATE webhook_lanes
SET lease_holder = NULL, lease_until = NULL, next_attempt_at = now()
WHERE subscription_id = $1 AND lane = $2 AND lease_holder = $3
