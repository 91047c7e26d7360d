-- Rows whose projection is done (applied, duplicate or stale). The pending predicate lets the
-- pending index find them by id. $1 ids; $2 lease owner in
-- leased mode (only rows still leased to it), NULL in transactional mode.
-- An erasure's row (moderation 'erase', V6) carried the erased user's id to Redis; once it is
-- done the id goes from the outbox too, so nothing PostgreSQL keeps names the user.
UPDATE leaderboard_outbox
SET published_at = now(), lease_owner = NULL, lease_expires_at = NULL,
    user_id = CASE WHEN moderation = 'erase' THEN 'erased' ELSE user_id END
WHERE id = ANY ($1::bigint[])
  AND published_at IS NULL
  AND parked_at IS NULL
  AND ($2::text IS NULL OR lease_owner = $2::text)
