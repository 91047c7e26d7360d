-- Retention deleted events after the lane's position $4 through $5 before the lane read them
-- (events/sql/sweep.sql keeps them for enabled subscriptions up to events.webhook_hold_hours):
-- the loss is recorded in webhook_gaps and the lane moves to $5, while the claim $3 holds it.
WITH lane AS (
    UPDATE webhook_lanes SET position = $5
    WHERE subscription_id = $1 AND lane = $2 AND lease_holder = $3
      AND position = $4 AND position < $5
    RETURNING subscription_id, lane
)
INSERT INTO webhook_gaps (subscription_id, lane, after_position, through_position)
SELECT subscription_id, lane, $4, $5 FROM lane
ON CONFLICT DO NOTHING
RETURNING through_position
