-- What extending a board's cron schedule starts from, read after the period lock is taken: the
-- schedule, the wall-clock time (in the board's zone) after which fire times are still to be
-- written (the last one written ahead, or now), the wall-clock time they are written up to,
-- and how many starts are ahead already. No row when the board has no cron schedule (any
-- more). Wall-clock times as 'YYYY-MM-DD"T"HH24:MI:SS' text, which croner's side parses.
-- $1 board id, $2 how far ahead (an interval).
SELECT d.reset,
       to_char(greatest(now(), (SELECT max(r.starts_at) FROM board_resets r
                                WHERE r.board_id = d.board_id AND r.actor = 'schedule'))
               AT TIME ZONE d.time_zone, 'YYYY-MM-DD"T"HH24:MI:SS') AS after_local,
       to_char((now() + $2::interval) AT TIME ZONE d.time_zone,
               'YYYY-MM-DD"T"HH24:MI:SS') AS until_local,
       (SELECT count(*) FROM board_resets r
        WHERE r.board_id = d.board_id AND r.starts_at > now()) AS ahead
FROM board_definitions d
WHERE d.board_id = $1 AND lb_reset_is_cron(d.reset)
