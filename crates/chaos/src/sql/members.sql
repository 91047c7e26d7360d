-- Every entry of one board, hidden ones (their users are banned) included, for checking each
-- member's score and version against its accepted commands and its hidden flag against the
-- run's bans. $1 board_id.
SELECT user_id, score, version, hidden
FROM user_scores
WHERE board_id = $1
