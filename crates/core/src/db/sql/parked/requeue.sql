-- Put parked rows back in the claim with a fresh attempt count.
-- $1 ids (NULL: any), $2 board (NULL: any).
UPDATE leaderboard_outbox
SET parked_at = NULL, attempts = 0, next_attempt_at = now(), last_error = NULL
WHERE parked_at IS NOT NULL
  AND published_at IS NULL
  AND ($1::bigint[] IS NULL OR id = ANY ($1::bigint[]))
  AND ($2::text IS NULL OR board_id = $2::text)
