-- Deletes a subscription; its lanes, parked deliveries and gaps go with it (ON DELETE CASCADE).
DELETE FROM webhook_subscriptions WHERE subscription_id = $1 RETURNING subscription_id
