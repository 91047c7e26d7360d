-- Archives the closed periods whose close is older than the retention ($1, an interval): from
-- now on reads of them go to PostgreSQL, and their Redis keys may go once no api can still
-- send a reader to them (period_archive_keys_due.sql). Oldest first, at most $2.
-- $1 retention, $2 limit.
WITH due AS (
    SELECT board_id, period FROM period_closes
    WHERE archived_at IS NULL AND closed_at < now() - $1::interval
    ORDER BY closed_at
    LIMIT $2
)
UPDATE period_closes c SET archived_at = now()
FROM due
WHERE c.board_id = due.board_id AND c.period = due.period
