-- Every entry of one board, hidden ones (their users are banned) included, for checking each
-- member's tuple (score and the other columns in order-key form, 0 past the board's columns)
-- and version against its accepted commands and its hidden flag against the run's bans.
-- $1 board_id.
SELECT user_id, score, version, hidden, col2, col3
FROM user_scores
WHERE board_id = $1
