-- Writes a cron schedule's next boundaries: each wall-clock fire time becomes an instant in the
-- board's zone by PostgreSQL's rule (a time skipped by a daylight-saving change moves forward
-- by the change, `02:30` to `03:30`; a time that occurs twice is its later occurrence), and is
-- written only while it is still in the future by the clock read now, under the period lock
-- (so that no command read a clock past it before it existed). Whole minutes, so whole seconds
-- (board_resets' CHECK); a boundary already there is kept.
-- $1 board id, $2 the schedule the fire times were computed from (a definer that changes it
-- holds the period lock too: board/definition/store.rs), $3 wall-clock times.
INSERT INTO board_resets (board_id, starts_at, actor)
SELECT d.board_id, w.at_text::timestamp AT TIME ZONE d.time_zone, 'schedule'
FROM board_definitions d, unnest($3::text[]) AS w(at_text)
WHERE d.board_id = $1 AND d.reset = $2
  AND (w.at_text::timestamp AT TIME ZONE d.time_zone) > clock_timestamp()
ON CONFLICT (board_id, starts_at) DO NOTHING
