-- The boards a closed run froze, by period key (<period> or <period>~<cohort>), with their
-- tier, in order. $1 competition id, $2 run.
SELECT p.period, coalesce(k.tier, 0) AS tier, k.cohort, p.entries,
       encode(p.digest, 'hex') AS digest
FROM period_closes p
LEFT JOIN competition_cohorts k
    ON k.competition_id = $1 AND k.run = $2 AND p.period = $2 || '~' || lpad(k.cohort::text, 6, '0')
WHERE p.board_id = $1 AND (p.period = $2 OR (p.period > $2 || '~' AND p.period < $2 || '~~'))
ORDER BY p.period
