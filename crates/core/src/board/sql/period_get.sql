-- A closed period's close row. No row: the period is not closed (or does not exist).
-- $1 board id, $2 period id.
SELECT to_char(closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS closed_at,
       sort, tie_break, entries, encode(digest, 'hex') AS digest, columns::text AS columns
FROM period_closes
WHERE board_id = $1 AND period = $2
