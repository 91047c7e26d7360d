-- Rows whose projection is done (applied, duplicate or stale). The pending predicate lets the
-- pending index find them by id. $1 ids; $2 lease owner in
-- leased mode (only rows still leased to it), NULL in transactional mode.
UPDATE leaderboard_outbox
SET published_at = now(), lease_owner = NULL, lease_expires_at = NULL
WHERE id = ANY ($1::bigint[])
  AND published_at IS NULL
  AND parked_at IS NULL
  AND ($2::text IS NULL OR lease_owner = $2::text)
