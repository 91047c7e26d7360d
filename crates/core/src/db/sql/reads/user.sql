-- One member with its rank (1 + members ranked above it). $1 board, $2 user id.
SELECT s.score, s.version,
       1 + (SELECT count(*) FROM user_scores o
            WHERE o.board_id = s.board_id
              AND (o.score, o.user_id) > (s.score, s.user_id)) AS rank
FROM user_scores s
WHERE s.board_id = $1 AND s.user_id = $2
