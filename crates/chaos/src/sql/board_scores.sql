-- Every visible member of one board with its place after its score: the tie (0 on boards whose
-- ties go by user id), the column count and the other columns in order-key form (0 past the
-- board's columns), for comparing the source with the projection and with reads: an entry of a
-- banned user is hidden (V6), so neither Redis nor any read holds it. $1 board_id.
SELECT user_id, score, version, tie, columns, col2, col3
FROM user_scores
WHERE board_id = $1 AND NOT hidden
