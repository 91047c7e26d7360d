-- A run whose scores needed no entry may have no row yet: the close gives it one (before
-- close_run.sql, which updates it). $1 competition id, $2 run (period id).
INSERT INTO competition_runs (competition_id, run) VALUES ($1, $2)
ON CONFLICT (competition_id, run) DO NOTHING
