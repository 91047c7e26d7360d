-- The dispatcher's claim (core webhook/lane.rs): up to $3 lanes that are due, behind the log's
-- last position and not leased, of enabled subscriptions whose circuit is not open, leased to
-- the claim $1 for $2 ms. FOR UPDATE SKIP LOCKED: concurrent claims take different lanes.
--
-- A subscription with $4 or more consecutive failures whose open time has passed is half open:
-- one of its lanes goes, as a trial. The claim that takes it pushes circuit_open_until $5 ms
-- forward under the subscription's row lock; a concurrent claim re-reads the row after that
-- commit, finds the circuit open again, and takes none of its lanes.
WITH head AS (
    -- As events/sql/bounds.sql reads it: retention may have deleted every event.
    SELECT greatest(coalesce((SELECT position FROM events ORDER BY position DESC LIMIT 1), 0),
                    (SELECT swept_through FROM event_retention)) AS position
),
due AS (
    SELECT l.subscription_id, l.lane, s.failures >= $4 AS trial
    FROM webhook_lanes l
    JOIN webhook_subscriptions s USING (subscription_id)
    WHERE s.enabled
      AND l.position < (SELECT position FROM head)
      AND l.next_attempt_at <= now()
      AND (l.lease_until IS NULL OR l.lease_until < now())
      AND (s.circuit_open_until IS NULL OR s.circuit_open_until <= now())
    ORDER BY l.next_attempt_at
    LIMIT $3
    FOR UPDATE OF l SKIP LOCKED
),
trials AS (
    UPDATE webhook_subscriptions s
    SET circuit_open_until = now() + $5 * interval '1 millisecond'
    FROM (SELECT DISTINCT ON (subscription_id) subscription_id, lane
          FROM due WHERE trial ORDER BY subscription_id, lane) t
    WHERE s.subscription_id = t.subscription_id
      AND s.failures >= $4
      AND (s.circuit_open_until IS NULL OR s.circuit_open_until <= now())
    RETURNING s.subscription_id, t.lane
),
chosen AS (
    SELECT subscription_id, lane, false AS trial FROM due WHERE NOT trial
    UNION ALL
    SELECT subscription_id, lane, true FROM trials
)
UPDATE webhook_lanes l
SET lease_holder = $1, lease_until = now() + $2 * interval '1 millisecond'
FROM chosen c, webhook_subscriptions s
WHERE l.subscription_id = c.subscription_id AND l.lane = c.lane
  AND s.subscription_id = c.subscription_id
RETURNING l.subscription_id, l.lane, l.position, l.attempts, c.trial, s.url, s.secret, s.kinds,
          s.boards, s.lanes
