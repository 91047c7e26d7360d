-- Whether a board has any source row, hidden ones included: a board whose every entry is hidden
-- (a ban, a removal's later command) exists and is empty, and its rebuild seals it empty; a
-- board without rows does not exist, and nothing in Redis should stand for it (one index probe).
-- $1 stored board id.
SELECT EXISTS (SELECT 1 FROM user_scores WHERE board_id = $1) AS exists
