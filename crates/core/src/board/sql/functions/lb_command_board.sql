-- lb_command_board: the board a score command writes, p_board itself or the period of it open now
-- (under the board's period lock, then the clock). Every operator's statement calls it in `go`
-- (board/sql/command/head.sql).
--
-- Its source exactly as migration V8 last defined it (migrations/V8__cron_schedules_and_archive.sql;
-- first defined by V7). Migrations are history: a change needs a new migration AND this file;
-- crates/core/tests/it/functions.rs checks that the migrated database holds this definition.
CREATE OR REPLACE FUNCTION lb_command_board(p_board text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    d         record;
    at        timestamptz;
    scheduled timestamptz;
    opened    record;
BEGIN
    SELECT reset, time_zone INTO d FROM board_definitions WHERE board_id = p_board;
    IF NOT FOUND OR d.reset = 'never' THEN
        RETURN p_board;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(lb_period_lock_key(p_board));
    at := clock_timestamp();
    SELECT r.starts_at, r.period INTO opened
    FROM board_resets r
    WHERE r.board_id = p_board AND r.starts_at <= at
    ORDER BY r.starts_at DESC
    LIMIT 1;
    scheduled := lb_schedule_start(d.reset, d.time_zone, at);
    IF scheduled IS NULL OR opened.starts_at >= scheduled THEN
        RETURN p_board || '~' || opened.period;
    END IF;
    RETURN p_board || '~' || lb_period_id(scheduled);
END
$$;
