-- Every visible member of one board with its tie (0 on boards whose ties go by user id), for
-- comparing the source with the projection and with reads: an entry of a banned user is hidden
-- (V6), so neither Redis nor any read holds it. $1 board_id.
SELECT user_id, score, version, tie
FROM user_scores
WHERE board_id = $1 AND NOT hidden
