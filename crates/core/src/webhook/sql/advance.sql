-- Moves a lane past position $4 and extends its lease by $5 ms, only while the claim $3 holds
-- it (a replica whose lease ran out and was taken over moves nothing). After a delivery ($6)
-- the subscription's failures and circuit are reset, written only when they are not already,
-- so that succeeding lanes never queue on the subscription's row lock.
WITH lane AS (
    UPDATE webhook_lanes
    SET position = greatest(position, $4), attempts = 0, last_error = NULL,
        lease_until = now() + $5 * interval '1 millisecond'
    WHERE subscription_id = $1 AND lane = $2 AND lease_holder = $3
    RETURNING subscription_id
),
healed AS (
    UPDATE webhook_subscriptions s SET failures = 0, circuit_open_until = NULL
    FROM lane
    WHERE $6 AND s.subscription_id = lane.subscription_id
      AND (s.failures <> 0 OR s.circuit_open_until IS NOT NULL)
    RETURNING s.subscription_id
)
SELECT (SELECT count(*) FROM lane) AS advanced, (SELECT count(*) FROM healed) AS healed
