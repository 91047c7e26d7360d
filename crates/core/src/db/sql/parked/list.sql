-- Parked rows, oldest first. $1 most rows.
SELECT id, event_id, board_id, user_id, absolute_score, score_version, attempts, last_error,
       (extract(epoch FROM parked_at) * 1000)::bigint AS parked_at_ms
FROM leaderboard_outbox
WHERE parked_at IS NOT NULL
  AND published_at IS NULL
ORDER BY id
LIMIT $1
