-- Boards with a cron schedule whose boundaries written ahead run short: fewer than $1 starts
-- ahead and none beyond now() + $2 (a schedule that fires every minute is written 1,000
-- boundaries ahead, a weekly one five weeks ahead; board/periods.rs). For the reconciler, after
-- each pass; board_definitions holds one row per declared board, and the count stops at $1.
-- $1 the low-water count, $2 the low-water horizon (an interval), $3 how many boards at most.
SELECT d.board_id
FROM board_definitions d
WHERE lb_reset_is_cron(d.reset)
  AND (SELECT count(*) FROM (SELECT 1 FROM board_resets r
                             WHERE r.board_id = d.board_id AND r.starts_at > now()
                             LIMIT $1) ahead) < $1
  AND NOT EXISTS (SELECT 1 FROM board_resets r
                  WHERE r.board_id = d.board_id AND r.starts_at > now() + $2::interval)
ORDER BY d.board_id
LIMIT $3
