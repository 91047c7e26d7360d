-- How many of an erasure's outbox rows (moderation 'erase') still wait to be projected: the
-- boards whose Redis keys may still name the user. Once a row is published its user_id is
-- overwritten (outbox/publish.sql), so a published erasure is never found by the id again.
-- A parked row counts as pending (the projector gave up on it: `lbctl parked requeue`).
-- $1 user id.
SELECT count(*) AS pending
FROM leaderboard_outbox
WHERE moderation = 'erase' AND user_id = $1 AND published_at IS NULL
