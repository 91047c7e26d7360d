-- ledgerboard schema, version 7: periods (issue 22, part 1).
--
-- A board may reset: daily, weekly or monthly in a named time zone, every N seconds, or only
-- when an admin asks (`manual`; the scheduled kinds take manual resets too). Each period is a
-- board of its own in every table and in Redis: its id is the base board's, a `~`, and the
-- period's start in UTC (`weekly~20261130T000000Z`), so the source rows, the outbox, the
-- projection, its seal, the reconciler and the rebuild work on a period exactly as on any
-- board. A board that does not reset (`never`, the default) keeps its plain id: nothing changes
-- for it.
--
-- Which period a command belongs to is decided inside its statement by the database clock
-- (lb_command_board below): the period open when the statement reads the clock. Schema N and
-- N+1 run side by side during a rolling upgrade: version 6's statements write every command
-- to the base board, so a board may be declared with a reset only once every api runs this
-- release (docs/operations.md).

ALTER TABLE board_definitions
    ADD COLUMN reset text NOT NULL DEFAULT 'never'
        CONSTRAINT board_definitions_reset CHECK (
            reset IN ('never', 'manual', 'daily', 'weekly', 'monthly')
            OR reset ~ '^every [1-9][0-9]{0,7}s$'),
    -- The zone whose midnight (and Monday, and first of the month) starts daily, weekly and
    -- monthly periods; checked against pg_timezone_names when a definition is written.
    ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';

-- The start of each period opened by hand (and the first period of a board declared with a
-- reset: the declaration opens it, so no period starts before the board existed). Whole
-- seconds, so that a period's id is its start to the second; a reset opens its period at the
-- next whole second, after every command that committed before the reset was asked for.
CREATE TABLE board_resets (
    board_id   text        COLLATE "C" NOT NULL,
    starts_at  timestamptz NOT NULL
        CONSTRAINT board_resets_whole_second CHECK (starts_at = date_trunc('second', starts_at)),
    actor      text        NOT NULL,
    asked_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (board_id, starts_at)
);

-- A period's id: its start in UTC, to the second. Fixed width, so ids sort as periods do.
CREATE FUNCTION lb_period_id(p_start timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT to_char(p_start AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISS"Z"')
$$;

-- The start of the period of board p_board (reset p_reset in zone p_zone) that holds instant
-- p_at: the later of the schedule's last boundary at or before p_at and the last manual reset
-- at or before it. NULL for a board that never resets. A pure function of its arguments and
-- board_resets, so a test can ask it about any instant (a clock it controls).
CREATE FUNCTION lb_period_start(p_board text, p_reset text, p_zone text, p_at timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_reset = 'never' THEN NULL ELSE greatest(
        CASE p_reset
            WHEN 'daily' THEN date_trunc('day', p_at, p_zone)
            WHEN 'weekly' THEN date_trunc('week', p_at, p_zone)
            WHEN 'monthly' THEN date_trunc('month', p_at, p_zone)
            WHEN 'manual' THEN NULL
            -- 'every Ns': boundaries at whole multiples of N seconds since the Unix epoch.
            ELSE to_timestamp(floor(extract(epoch FROM p_at)
                                    / substring(p_reset FROM '[0-9]+')::bigint)
                              * substring(p_reset FROM '[0-9]+')::bigint)
        END,
        (SELECT max(r.starts_at) FROM board_resets r
         WHERE r.board_id = p_board AND r.starts_at <= p_at)) END
$$;

-- The advisory lock that orders a board's commands with the close of its periods: every
-- command of a board that resets holds it shared until it commits, a close takes it
-- exclusively (so it waits for every command that may still land in the period it closes).
-- Transaction-level, so it works behind a transaction pooler.
CREATE FUNCTION lb_period_lock_key(p_board text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT hashtextextended('ledgerboard.period:' || p_board, 0)
$$;

-- The board a command of p_board writes to: p_board itself when it never resets, else the
-- period open now. The shared lock is taken before the clock is read, so a close that holds the
-- lock exclusively after a period's end knows that every command still to come reads a clock
-- past that end, and every command that read an earlier one has committed. clock_timestamp(),
-- not now(): the transaction's start could precede the lock by the time the command waited
-- for it.
CREATE FUNCTION lb_command_board(p_board text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    d record;
BEGIN
    SELECT reset, time_zone INTO d FROM board_definitions WHERE board_id = p_board;
    IF NOT FOUND OR d.reset = 'never' THEN
        RETURN p_board;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(lb_period_lock_key(p_board));
    RETURN p_board || '~'
        || lb_period_id(lb_period_start(p_board, d.reset, d.time_zone, clock_timestamp()));
END
$$;

-- A period is a board of its own: its id is the base board's id, `~`, and the period id.
ALTER TABLE user_scores DROP CONSTRAINT user_scores_board_id_format;
ALTER TABLE user_scores ADD CONSTRAINT user_scores_board_id_format
    CHECK (board_id ~ '^[A-Za-z0-9_.-]{1,64}(~[0-9]{8}T[0-9]{6}Z)?$') NOT VALID;
ALTER TABLE user_scores VALIDATE CONSTRAINT user_scores_board_id_format;

-- A closed period's final standings, frozen for payouts (issue 22, part 2): written once, in
-- one transaction, after the period ended, every command that read a clock inside it has
-- committed (the close holds the period lock exclusively) and its outbox rows are projected.
-- The api serves them from here, never from Redis. A moderation after the close changes the
-- period's live rows (and its projection) but not these; an erasure replaces the user's id
-- here too, with its pseudonym (moderation_erase.sql), which `lbctl period verify` names.
CREATE TABLE period_closes (
    board_id  text        COLLATE "C" NOT NULL,
    period    text        COLLATE "C" NOT NULL,
    closed_at timestamptz NOT NULL DEFAULT now(),
    -- The order the standings were ranked in (the board's, at the close).
    sort      text        NOT NULL,
    tie_break text        NOT NULL,
    entries   bigint      NOT NULL,
    -- SHA-256 over the standings' lines in position order (lb_standings_line, joined by '\n').
    digest    bytea       NOT NULL,
    PRIMARY KEY (board_id, period)
);

CREATE TABLE period_standings (
    board_id text   COLLATE "C" NOT NULL,
    period   text   COLLATE "C" NOT NULL,
    -- 1..entries in the board's order (score, then tie, then user id): unique.
    position bigint NOT NULL,
    -- Competition (1, 2, 2, 4) and dense (1, 2, 2, 3) ranks by score, as the reads' rank modes.
    rank     bigint NOT NULL,
    dense    bigint NOT NULL,
    user_id  text   COLLATE "C" NOT NULL,
    score    bigint NOT NULL,
    tie      bigint NOT NULL,
    version  bigint NOT NULL,
    metadata jsonb,
    PRIMARY KEY (board_id, period, position)
);

-- An erasure finds the user's frozen rows.
CREATE INDEX period_standings_user ON period_standings (user_id);

-- One line of the digest: what a payout depends on (position, user, score, tie). User ids have
-- no control characters (domain.rs), so tabs and newlines cannot be forged inside one.
CREATE FUNCTION lb_standings_line(p_position bigint, p_user text, p_score bigint, p_tie bigint)
RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT p_position || E'\t' || p_user || E'\t' || p_score || E'\t' || p_tie
$$;
