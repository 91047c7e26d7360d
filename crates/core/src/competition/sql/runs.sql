-- A competition's closed runs in order, after $2 ('' for the first), at most $3.
-- $1 competition id.
SELECT run FROM competition_runs
WHERE competition_id = $1 AND run > $2 AND closed_at IS NOT NULL
ORDER BY run
LIMIT $3
