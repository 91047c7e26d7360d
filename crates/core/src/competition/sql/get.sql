-- One competition, with its state by the database clock. $1 competition id.
SELECT competition_id, category, entry_required, max_size, metadata::text AS metadata,
       prizes::text AS prizes, entrants,
       to_char(starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS starts_at,
       to_char(ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ends_at,
       CASE WHEN now() < starts_at THEN 'upcoming' WHEN now() < ends_at THEN 'open'
            ELSE 'ended' END AS state
FROM competitions
WHERE competition_id = $1
