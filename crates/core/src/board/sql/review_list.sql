-- A page of held scores in one state, oldest first, after the last one of the previous page
-- (board/guard/review.rs): the partial index held_scores_queue serves the pending queue, so a
-- page reads its own rows however many were decided. Decided ones ($1 'approved' or
-- 'rejected') are read by the same order without that index: an operator's look back, never a
-- request path of the game.
-- $1 state, $2 held_at of the previous page's last row (NULL: the first page), $3 its event
-- id, $4 page size, $5 board id (as sent) or NULL for every board.
SELECT event_id, board_id, period_board, user_id, fields::text AS fields, attempt_id, rule,
       detail, state,
       to_char(held_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS held_at,
       to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS decided_at,
       decided_by, reason
FROM held_scores
WHERE state = $1
  AND ($2::text IS NULL
       OR (held_at, event_id) > ($2::text::timestamptz, $3::uuid))
  AND ($5::text IS NULL OR board_id = $5)
ORDER BY held_at, event_id
LIMIT $4
