-- Records that an archived period's Redis keys were unlinked.
-- $1 board id (the base board), $2 period.
UPDATE period_closes SET keys_dropped_at = now()
WHERE board_id = $1 AND period = $2 AND archived_at IS NOT NULL
