-- A failed delivery of the lane's next event (position $9), while the claim $3 holds the lane:
-- one more attempt, retried after $5 ms, the error kept, the lease released. At $6 attempts the
-- event is parked instead, with its body as it was signed ($10 to $13), and the lane moves past
-- it at once. The subscription counts one more consecutive failure; at $7 the circuit opens for
-- $8 ms.
WITH lane AS (
    SELECT subscription_id, lane, attempts + 1 AS attempts
    FROM webhook_lanes
    WHERE subscription_id = $1 AND lane = $2 AND lease_holder = $3
    FOR UPDATE
),
parked AS (
    INSERT INTO webhook_parked
        (subscription_id, position, event_id, kind, board_id, body, attempts, last_error)
    SELECT lane.subscription_id, $9, $10, $11, $12, $13, lane.attempts, $4
    FROM lane
    WHERE lane.attempts >= $6
    ON CONFLICT (subscription_id, position) DO NOTHING
    RETURNING position
),
moved AS (
    UPDATE webhook_lanes l
    SET attempts = CASE WHEN lane.attempts >= $6 THEN 0 ELSE lane.attempts END,
        position = CASE WHEN lane.attempts >= $6 THEN greatest(l.position, $9) ELSE l.position END,
        next_attempt_at = CASE WHEN lane.attempts >= $6 THEN now()
                               ELSE now() + $5 * interval '1 millisecond' END,
        last_error = $4, lease_holder = NULL, lease_until = NULL
    FROM lane
    WHERE l.subscription_id = lane.subscription_id AND l.lane = lane.lane
    RETURNING lane.attempts
),
sub AS (
    UPDATE webhook_subscriptions s
    SET failures = s.failures + 1,
        circuit_open_until = CASE WHEN s.failures + 1 >= $7
                                  THEN now() + $8 * interval '1 millisecond'
                                  ELSE s.circuit_open_until END
    FROM lane
    WHERE s.subscription_id = lane.subscription_id
    RETURNING s.failures >= $7 AS open
)
SELECT (SELECT attempts FROM moved) AS attempts,
       coalesce((SELECT attempts >= $6 FROM lane), false) AS parked,
       coalesce((SELECT open FROM sub), false) AS circuit_open
