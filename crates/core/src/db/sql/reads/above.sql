-- Up to $4 members ranked just above ($2 score, $3 user id), nearest first.
SELECT user_id, score
FROM user_scores
WHERE board_id = $1 AND (score, user_id) > ($2, $3)
ORDER BY score, user_id
LIMIT $4
