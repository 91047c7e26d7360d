-- Leased claim: reserve the next due pending rows for $2 until now() + $3 ms, by the database
-- clock (never a projector's). A lease that expired is taken over. `id = ANY(ARRAY(...))`
-- evaluates the claim first and then looks the rows up by id in the pending index (hence the
-- repeated predicate), so stale statistics cannot turn this into a join over the outbox.
-- $1 batch size, $2 owner, $3 lease in milliseconds.
UPDATE leaderboard_outbox
SET lease_owner = $2,
    lease_expires_at = now() + make_interval(secs => $3::float8 / 1000.0)
WHERE published_at IS NULL
  AND parked_at IS NULL
  AND id = ANY (ARRAY(
    SELECT id
    FROM leaderboard_outbox
    WHERE published_at IS NULL
      AND parked_at IS NULL
      AND next_attempt_at <= now()
      AND (lease_expires_at IS NULL OR lease_expires_at <= now())
    ORDER BY id
    LIMIT $1
    FOR UPDATE SKIP LOCKED))
RETURNING id, event_id, board_id, user_id, absolute_score, score_version, attempts,
       traceparent, columns, col2, col3, tie, metadata::text AS metadata, moderation
