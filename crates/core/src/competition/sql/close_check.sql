-- Before a run's close (competition/close.rs): whether the run exists, has ended by the
-- database clock (a later period of its board is open now), is closed, and whether an earlier
-- run of the competition still waits for its close (runs close in order: each digest chains to
-- the previous one's). The board's order comes from period_close_check.sql.
-- $1 competition id, $2 run (period id).
SELECT lb_period_id(lb_period_start($1, d.reset, d.time_zone, clock_timestamp())) > $2 AS ended,
       EXISTS (SELECT 1 FROM competition_runs r
               WHERE r.competition_id = $1 AND r.run = $2 AND r.closed_at IS NOT NULL) AS closed,
       EXISTS (SELECT 1 FROM competition_runs r
               WHERE r.competition_id = $1 AND r.run < $2 AND r.closed_at IS NULL) AS waiting
FROM competitions c
JOIN board_definitions d ON d.board_id = c.competition_id AND d.reset <> 'never'
WHERE c.competition_id = $1
