-- An approval whose score could not be applied goes back to the queue (board/guard/review.rs),
-- as it was. $1 event id.
UPDATE held_scores SET state = 'pending', decided_at = NULL, decided_by = NULL, reason = NULL
WHERE event_id = $1 AND state = 'approved'
