-- One chunk of a board's source rows in user id (byte) order, after the cursor $2 ('' to
-- start): keyset pagination on the primary key, so memory and cost per chunk stay flat.
-- $1 board, $2 cursor, $3 chunk size.
SELECT user_id, score, version, columns, col2, col3, tie, metadata::text AS metadata
FROM user_scores
WHERE board_id = $1
  AND NOT hidden
  AND user_id > $2
ORDER BY user_id
LIMIT $3
