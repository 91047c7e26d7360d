-- Which of these members of board $1 have a source row ($2 user ids).
SELECT user_id FROM user_scores WHERE board_id = $1 AND NOT hidden AND user_id = ANY ($2::text[])
