-- One board's definition; no row for an undeclared board (board/definition/types.rs's `implicit`).
-- $1 board id.
SELECT display_name, operator, sort, tie_break, min_score, max_score, min_delta, max_delta,
       reset, time_zone, columns::text AS columns, feeds,
       write_policy, attempts::text AS attempts, review::text AS review, revision
FROM board_definitions
WHERE board_id = $1
