-- Drops the boundaries a board's former cron schedule wrote ahead, when its schedule changes
-- (which only a board without entries may do: board/definition/store.rs). Past ones stay: they
-- bound the periods that were.
-- $1 board id.
DELETE FROM board_resets
WHERE board_id = $1 AND actor = 'schedule' AND starts_at > now()
