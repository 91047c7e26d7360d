-- Rows the projection script refused: one more attempt, the next one after a capped
-- exponential back-off, parked once the attempts reach the maximum.
-- $1 ids, $2 errors, $3 base delay ms, $4 max delay ms, $5 max attempts, $6 lease owner in
-- leased mode (only rows still leased to it), NULL in transactional mode.
UPDATE leaderboard_outbox o
SET attempts = o.attempts + 1,
    last_error = left(f.error, 2000),
    next_attempt_at = now() + make_interval(
        secs => least($3::float8 * power(2::float8, o.attempts), $4::float8) / 1000.0),
    parked_at = CASE WHEN o.attempts + 1 >= $5 THEN now() END,
    lease_owner = NULL,
    lease_expires_at = NULL
FROM unnest($1::bigint[], $2::text[]) AS f(id, error)
WHERE o.id = f.id
  AND o.published_at IS NULL
  AND o.parked_at IS NULL
  AND ($6::text IS NULL OR o.lease_owner = $6::text)
RETURNING o.id, o.parked_at IS NOT NULL AS parked
