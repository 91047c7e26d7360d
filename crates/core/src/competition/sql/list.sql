-- A page of competitions in id order after the previous page's last ($3, '' for the first), of
-- one category ($1, NULL: every one) and one state ($2, NULL: every one), with their state by
-- the database clock. By the primary key or competitions_listing; the state is a filter on the
-- rows read, so a page of open ones among many ended ones reads past the ended ones (the table
-- grows with the competitions operators declare, not with the players' load).
-- $4 page size.
SELECT competition_id, category, entry_required, max_size, metadata::text AS metadata,
       prizes::text AS prizes, entrants,
       to_char(starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS starts_at,
       to_char(ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ends_at,
       state
FROM (
    SELECT *, CASE WHEN now() < starts_at THEN 'upcoming' WHEN now() < ends_at THEN 'open'
                   ELSE 'ended' END AS state
    FROM competitions
    WHERE ($1::text IS NULL OR category = $1) AND competition_id > $3
) c
WHERE $2::text IS NULL OR state = $2
ORDER BY competition_id
LIMIT $4
