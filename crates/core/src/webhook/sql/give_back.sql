-- Gives back every lane and requeued parked delivery leased to one of the claims $1: claims
-- whose answer never reached the dispatcher (PostgreSQL restarted, or the round trip's bound
-- ran out, after the claim had committed). No turn works what they leased, so without this it
-- would wait for the lease to run out. Every holder is unique per claim, so nothing another
-- claim holds is touched.
WITH lanes AS (
    UPDATE webhook_lanes SET lease_holder = NULL, lease_until = NULL
    WHERE lease_holder = ANY($1)
    RETURNING 1
),
parked AS (
    -- The claim only leases requeued rows (their partial index).
    UPDATE webhook_parked SET lease_holder = NULL, lease_until = NULL
    WHERE requeued_at IS NOT NULL AND lease_holder = ANY($1)
    RETURNING 1
)
SELECT (SELECT count(*) FROM lanes) + (SELECT count(*) FROM parked) AS given_back
