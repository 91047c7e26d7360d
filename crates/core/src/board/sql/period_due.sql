-- Periods that have ended and are not closed, oldest first, for the reconciler's closes: of
-- every board that resets, each period that has an entry count (a period where nothing landed
-- has none and needs no close; board_entry_counts' primary key finds a board's periods by a
-- prefix range). A competition's cohorts (`<period>~<cohort>`, migration V18) close with their
-- run (competition/close.rs), never one at a time here.
-- $1 how many at most.
SELECT d.board_id, p.period
FROM board_definitions d
CROSS JOIN LATERAL (
    SELECT DISTINCT substr(e.board_id, length(d.board_id) + 2) AS period
    FROM board_entry_counts e
    WHERE e.board_id > d.board_id || '~' AND e.board_id < d.board_id || '~~'
) p
WHERE d.reset <> 'never'
  AND strpos(p.period, '~') = 0
  AND p.period < lb_period_id(lb_period_start(d.board_id, d.reset, d.time_zone, now()))
  AND NOT EXISTS (SELECT 1 FROM period_closes c
                  WHERE c.board_id = d.board_id AND c.period = p.period)
ORDER BY p.period, d.board_id
LIMIT $1
