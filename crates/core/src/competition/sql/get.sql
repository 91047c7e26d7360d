-- One competition, with its state and its run now by the database clock: a one-off
-- competition's only run (the period that starts at starts_at), a recurring one's current
-- period, with that run's entrants and cohorts. $1 competition id.
SELECT c.competition_id, c.category, c.entry_required, c.max_size, c.metadata::text AS metadata,
       c.prizes::text AS prizes, c.duration_s, c.cohort_size, c.rating_band,
       c.tiers::text AS tiers,
       to_char(c.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS starts_at,
       to_char(c.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS ends_at,
       CASE WHEN c.starts_at IS NULL THEN 'open' WHEN now() < c.starts_at THEN 'upcoming'
            WHEN now() < c.ends_at THEN 'open' ELSE 'ended' END AS state,
       k.run, coalesce(r.entrants, 0) AS entrants, coalesce(r.cohorts, 0) AS cohorts
FROM competitions c
JOIN board_definitions d ON d.board_id = c.competition_id
CROSS JOIN LATERAL (
    SELECT CASE
               WHEN d.reset = 'never' THEN ''
               WHEN c.starts_at IS NOT NULL THEN lb_period_id(c.starts_at)
               ELSE lb_period_id(lb_period_start(d.board_id, d.reset, d.time_zone, now()))
           END AS run
) k
LEFT JOIN competition_runs r ON r.competition_id = c.competition_id AND r.run = k.run
WHERE c.competition_id = $1
