-- The held score recorded for an event id, if any (board/guard/): a repeat of a held command is
-- told what it was told the first time. $1 event id.
SELECT board_id, user_id, fields::text AS fields, answer::text AS answer
FROM held_scores
WHERE event_id = $1
