-- Every member of one board in leaderboard order (the projection's order), for comparing
-- the source with the projection. $1 board_id.
SELECT user_id, score, version
FROM user_scores
WHERE board_id = $1
ORDER BY score DESC, user_id DESC
