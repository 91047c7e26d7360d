-- The prize table and tiers a closed run froze (NULL: not closed). $1 competition id, $2 run.
SELECT prizes::text AS prizes, tiers::text AS tiers FROM competition_runs
WHERE competition_id = $1 AND run = $2 AND closed_at IS NOT NULL
