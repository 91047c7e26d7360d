-- What a moderation command did (moderation.rs), kept with its audit row so that a repeat of
-- the action id answers the same. $1 action id, $2 the result (JSON text).
UPDATE moderation_actions SET result = $2::jsonb WHERE action_id = $1
