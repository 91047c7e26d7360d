-- The runs that have ended and are not closed, oldest first (competition/close.rs `close_due`):
-- of every competition, each run with a row (an entry opened it) or with scores (a period of
-- its board with an entry count: board_entry_counts' primary key finds them by a prefix range,
-- cohorts included), older than the period open now, not closed.
-- $1 how many at most.
SELECT x.competition_id, x.run
FROM (
    SELECT r.competition_id, r.run
    FROM competition_runs r
    WHERE r.closed_at IS NULL
    UNION
    SELECT c.competition_id, p.run
    FROM competitions c
    CROSS JOIN LATERAL (
        SELECT DISTINCT substr(e.board_id, length(c.competition_id) + 2, 16) AS run
        FROM board_entry_counts e
        WHERE e.board_id > c.competition_id || '~' AND e.board_id < c.competition_id || '~~'
    ) p
    WHERE NOT EXISTS (SELECT 1 FROM competition_runs r
                      WHERE r.competition_id = c.competition_id AND r.run = p.run
                        AND r.closed_at IS NOT NULL)
) x
JOIN board_definitions d ON d.board_id = x.competition_id AND d.reset <> 'never'
WHERE x.run < lb_period_id(lb_period_start(d.board_id, d.reset, d.time_zone, now()))
ORDER BY x.run, x.competition_id
LIMIT $1
