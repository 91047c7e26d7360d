-- One operator action. $1 actor, $2 action, $3 board, $4 user, $5 detail.
INSERT INTO operator_actions (actor, action, board, user_id, detail)
VALUES ($1, $2, $3, $4, $5)
