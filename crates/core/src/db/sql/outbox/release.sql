-- Leased mode: give rows back without charging an attempt after a Redis outage. (A batch
-- abandoned at shutdown keeps its lease until it runs out.)
-- $1 ids, $2 owner.
UPDATE leaderboard_outbox
SET lease_owner = NULL, lease_expires_at = NULL
WHERE id = ANY ($1::bigint[])
  AND lease_owner = $2
  AND published_at IS NULL
  AND parked_at IS NULL
