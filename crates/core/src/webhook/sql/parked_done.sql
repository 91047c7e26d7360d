-- A requeued parked delivery went through: it is no longer parked (while the claim $3 holds it).
DELETE FROM webhook_parked
WHERE subscription_id = $1 AND position = $2 AND lease_holder = $3
