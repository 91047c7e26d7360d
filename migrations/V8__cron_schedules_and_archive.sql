-- ledgerboard schema, version 8: cron schedules and archived periods (issue 22). One file: a
-- release adds one migration, so that the previous release still runs against it.
--
-- Cron schedules.
--
-- A board may reset at the fire times of a five-field cron expression in its time zone
-- (`0 0 * * 1`: Mondays at midnight; `0 18 * * FRI`: Fridays at 18:00). PostgreSQL does not
-- evaluate the expression: the reconciler (and the definition that declares the schedule)
-- computes its next fire times with croner and writes them ahead into board_resets, as rows
-- whose actor is 'schedule' (board/periods.rs, `extend_schedules`). A command then finds its
-- period exactly as on a board reset by hand: the latest start at or before the clock its
-- statement read (lb_period_start), one primary-key lookup. A boundary is only ever written
-- while it is in the future and while the board's period lock is held exclusively (the
-- commands of the board hold it shared while they read the clock), so no command that read a
-- clock past a boundary can have landed before it.
--
-- Schema N and N+1 side by side: version 7's binaries refuse a definition whose reset is a
-- cron expression (they do not know the word), so declare cron boards only once every daemon
-- runs this release (docs/operations.md).

-- Whether a reset is a cron expression: five fields separated by single spaces (the api and
-- lbctl send them so; croner checked the rest before the row was written).
CREATE FUNCTION lb_reset_is_cron(p_reset text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT p_reset ~ '^[^ ]+( [^ ]+){4}$'
$$;

ALTER TABLE board_definitions DROP CONSTRAINT board_definitions_reset;
ALTER TABLE board_definitions ADD CONSTRAINT board_definitions_reset CHECK (
    reset IN ('never', 'manual', 'daily', 'weekly', 'monthly')
    OR reset ~ '^every [1-9][0-9]{0,7}s$'
    OR lb_reset_is_cron(reset));

-- The last boundary of a computed schedule at or before p_at (daily, weekly and monthly in
-- zone p_zone, every N seconds); NULL for `manual`, a cron schedule (their boundaries are
-- board_resets' rows) and `never`. No sub-select, so PostgreSQL inlines it where it is called.
CREATE FUNCTION lb_schedule_start(p_reset text, p_zone text, p_at timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN p_reset = 'daily' THEN date_trunc('day', p_at, p_zone)
        WHEN p_reset = 'weekly' THEN date_trunc('week', p_at, p_zone)
        WHEN p_reset = 'monthly' THEN date_trunc('month', p_at, p_zone)
        -- 'every Ns': boundaries at whole multiples of N seconds since the Unix epoch.
        WHEN p_reset LIKE 'every %' THEN
            to_timestamp(floor(extract(epoch FROM p_at)
                               / substring(p_reset FROM '[0-9]+')::bigint)
                         * substring(p_reset FROM '[0-9]+')::bigint)
    END
$$;

-- Each start's period id, kept with it: a command on a board reset by hand or by a cron
-- schedule reads its period's id instead of formatting it (lb_command_board below).
ALTER TABLE board_resets
    ADD COLUMN period text COLLATE "C" GENERATED ALWAYS AS (lb_period_id(starts_at)) STORED;

-- As version 7's: the later of the schedule's last boundary and the last start in board_resets
-- at or before p_at (a cron schedule, like `manual`, has only the latter). In PL/pgSQL rather
-- than SQL: a SQL function with a sub-select is not inlined, so every command's call planned
-- its body again (each transaction builds new executor state for PL/pgSQL's expressions),
-- where PL/pgSQL keeps its query's plan for the session (docs/performance.md, "Periods on the
-- command path").
CREATE OR REPLACE FUNCTION lb_period_start(p_board text, p_reset text, p_zone text,
                                           p_at timestamptz)
RETURNS timestamptz LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    opened timestamptz;
BEGIN
    IF p_reset = 'never' THEN
        RETURN NULL;
    END IF;
    SELECT max(r.starts_at) INTO opened
    FROM board_resets r
    WHERE r.board_id = p_board AND r.starts_at <= p_at;
    -- greatest() skips NULLs: a schedule without a computed boundary, or no start yet.
    RETURN greatest(lb_schedule_start(p_reset, p_zone, p_at), opened);
END
$$;

-- As version 7's (the same rule: the shared lock, then the clock), computing less: the start
-- of the period from board_resets comes with its id, so only a computed schedule's boundary
-- is formatted (lb_period_id's to_char cost about 40 µs of CPU a command).
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

COMMENT ON COLUMN board_resets.actor IS
    'who opened the period: a token''s name or lbctl''s --actor (a manual reset), '
    '''definition'' (the first period of a declared schedule), or ''schedule'' (a cron '
    'boundary written ahead)';

-- Archived periods.
--
-- A closed period stays readable for ever from PostgreSQL (its source rows and its frozen
-- standings are kept); its Redis projection is kept only for the reconciler's retention
-- (`reconciler.period_projection_retention_ms` after the close). Then the reconciler archives
-- it in two steps, each recorded here:
--   1. archived_at: from then on the api reads the period from PostgreSQL (it learns of it
--      within its period cache's time: period_current.sql answers the last archived period),
--      the reconciler's passes skip it and its rebuild requests are dropped;
--   2. keys_dropped_at: once archived_at is older than `reconciler.period_archive_grace_ms`
--      (longer than any api's cache), its Redis keys are unlinked.
-- So no reader is ever sent to keys that are gone, and nothing rebuilds them.
ALTER TABLE period_closes
    ADD COLUMN archived_at     timestamptz,
    ADD COLUMN keys_dropped_at timestamptz;

-- Whether a stored board id is an archived period (false for a board that is not a period).
CREATE FUNCTION lb_period_archived(p_board text) RETURNS boolean
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT position('~' IN p_board) > 0 AND EXISTS (
        SELECT 1 FROM period_closes c
        WHERE c.board_id = split_part(p_board, '~', 1)
          AND c.period = split_part(p_board, '~', 2)
          AND c.archived_at IS NOT NULL)
$$;
