-- A page of competitions in id order after the previous page's last ($3, '' for the first), of
-- one category ($1, NULL: every one) and one state ($2, NULL: every one), each with its run now
-- as get.sql reads it. By the primary key or competitions_listing; the state is a filter on the
-- rows read, so a page of open ones among many ended ones reads past the ended ones (the table
-- grows with the competitions operators declare, not with the players' load).
-- $4 page size.
SELECT c.competition_id, c.category, c.entry_required, c.max_size, c.metadata::text AS metadata,
       c.prizes::text AS prizes, c.duration_s, c.cohort_size, c.rating_band,
       c.tiers::text AS tiers,
       to_char(c.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS starts_at,
       to_char(c.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS ends_at,
       c.state, k.run, coalesce(r.entrants, 0) AS entrants, coalesce(r.cohorts, 0) AS cohorts
FROM (
    SELECT *, CASE WHEN starts_at IS NULL THEN 'open' WHEN now() < starts_at THEN 'upcoming'
                   WHEN now() < ends_at THEN 'open' ELSE 'ended' END AS state
    FROM competitions
    WHERE ($1::text IS NULL OR category = $1) AND competition_id > $3
) c
JOIN board_definitions d ON d.board_id = c.competition_id
CROSS JOIN LATERAL (
    SELECT CASE
               WHEN d.reset = 'never' THEN ''
               WHEN c.starts_at IS NOT NULL THEN lb_period_id(c.starts_at)
               ELSE lb_period_id(lb_period_start(d.board_id, d.reset, d.time_zone, now()))
           END AS run
) k
LEFT JOIN competition_runs r ON r.competition_id = c.competition_id AND r.run = k.run
WHERE $2::text IS NULL OR c.state = $2
ORDER BY c.competition_id
LIMIT $4
