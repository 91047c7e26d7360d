-- ledgerboard schema, version 8: cron schedules (issue 22).
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

-- As version 7's, except that a cron schedule (like `manual`) has no boundary computed here:
-- its boundaries are board_resets' rows, so the latest row at or before p_at decides.
CREATE OR REPLACE FUNCTION lb_period_start(p_board text, p_reset text, p_zone text,
                                           p_at timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_reset = 'never' THEN NULL ELSE greatest(
        CASE
            WHEN p_reset = 'daily' THEN date_trunc('day', p_at, p_zone)
            WHEN p_reset = 'weekly' THEN date_trunc('week', p_at, p_zone)
            WHEN p_reset = 'monthly' THEN date_trunc('month', p_at, p_zone)
            -- 'every Ns': boundaries at whole multiples of N seconds since the Unix epoch.
            WHEN p_reset LIKE 'every %' THEN
                to_timestamp(floor(extract(epoch FROM p_at)
                                   / substring(p_reset FROM '[0-9]+')::bigint)
                             * substring(p_reset FROM '[0-9]+')::bigint)
            -- 'manual' and cron schedules: board_resets only.
            ELSE NULL
        END,
        (SELECT max(r.starts_at) FROM board_resets r
         WHERE r.board_id = p_board AND r.starts_at <= p_at)) END
$$;

COMMENT ON COLUMN board_resets.actor IS
    'who opened the period: a token''s name or lbctl''s --actor (a manual reset), '
    '''definition'' (the first period of a declared schedule), or ''schedule'' (a cron '
    'boundary written ahead)';
