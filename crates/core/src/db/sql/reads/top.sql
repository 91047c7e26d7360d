-- A page of a board in leaderboard order (score desc, user id desc in byte order: the order
-- of Redis's ZRANGE … REV), served by user_scores_rank. $1 board, $2 offset, $3 limit.
SELECT user_id, score
FROM user_scores
WHERE board_id = $1
ORDER BY score DESC, user_id DESC
OFFSET $2
LIMIT $3
