-- Transactional claim: lock the next due pending rows, skipping rows other projectors hold.
-- The predicate is the pending index's, and `ORDER BY id LIMIT` walks that index in order, so
-- the plan never has to read or sort published rows (see the EXPLAIN test).
-- $1 batch size.
SELECT id, event_id, board_id, user_id, absolute_score, score_version, attempts,
       traceparent, columns, col2, col3, tie, metadata::text AS metadata, moderation
FROM leaderboard_outbox
WHERE published_at IS NULL
  AND parked_at IS NULL
  AND next_attempt_at <= now()
  AND (lease_expires_at IS NULL OR lease_expires_at <= now())
ORDER BY id
LIMIT $1
FOR UPDATE SKIP LOCKED
