-- The newest operator actions and moderation commands, newest first, as one log. $1 limit.
-- Both tables are read newest first through an index (operator_actions' ids grow with
-- time; moderation_actions_newest), at most
-- $1 rows from each.
(SELECT at, actor, action, board, user_id, detail
 FROM operator_actions ORDER BY id DESC LIMIT $1)
UNION ALL
(SELECT at, actor, action, board_id, user_id,
        jsonb_build_object('reason', reason, 'action_id', action_id, 'result', result)
 FROM moderation_actions ORDER BY at DESC LIMIT $1)
ORDER BY 1 DESC
LIMIT $1
