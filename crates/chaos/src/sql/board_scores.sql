-- Every member of one board with its tie (0 on boards whose ties go by user id), for comparing
-- the source with the projection. $1 board_id.
SELECT user_id, score, version, tie
FROM user_scores
WHERE board_id = $1
