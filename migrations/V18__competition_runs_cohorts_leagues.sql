-- ledgerboard schema, version 18: competition runs, cohorts and leagues (issue 39).
--
-- A competition's run is a period of its board (the board resets: by hand for a one-off
-- tournament, whose declaration writes the resets at its start and end; on its schedule for a
-- recurring one). Entries are per run; with a cohort size, each entry is placed in a cohort of
-- the run, and the cohort is a board of its own, `<board>~<period>~<cohort, 6 digits>`
-- (model/ids.rs), in every table and in Redis, exactly as a period is. A league orders tiers:
-- each entry is placed among the cohorts of the player's tier, and a run's close moves the top
-- and bottom of every cohort up and down a tier. The close freezes every cohort's standings
-- as a period's (period_standings, period_closes keyed by the board and `<period>~<cohort>`)
-- and the run's record here: the prizes as they stood, the moves, and one digest chained to
-- the previous run's (competition/sql/close_run.sql).
--
-- Rolling upgrade: version 17's api reads competitions.entrants, which this drops, so its
-- competition routes answer 500 until every api runs version 18; competitions were new in 17,
-- which is why nothing else is kept for it. Its score statement admits scores by the window as
-- before. Rolling back: restore the column (ALTER TABLE competitions ADD COLUMN entrants
-- integer NOT NULL DEFAULT 0).

-- A cohort is a board of its own: its period's id, `~`, and the cohort in 6 digits.
ALTER TABLE user_scores DROP CONSTRAINT user_scores_board_id_format;
ALTER TABLE user_scores ADD CONSTRAINT user_scores_board_id_format
    CHECK (board_id ~ '^[A-Za-z0-9_.-]{1,64}(~[0-9]{8}T[0-9]{6}Z(~[0-9]{6})?)?$') NOT VALID;
ALTER TABLE user_scores VALIDATE CONSTRAINT user_scores_board_id_format;

ALTER TABLE competitions
    DROP CONSTRAINT competitions_window,
    ALTER COLUMN starts_at DROP NOT NULL,
    ALTER COLUMN ends_at DROP NOT NULL,
    DROP COLUMN entrants,
    -- A recurring competition has no window: its runs are its board's periods, each taking
    -- scores for duration_s from its start (NULL: the whole period).
    ADD COLUMN duration_s  integer
        CONSTRAINT competitions_duration CHECK (duration_s IS NULL OR duration_s >= 1),
    -- At most this many entrants per cohort (NULL: no cohorts, the run is one board).
    ADD COLUMN cohort_size integer
        CONSTRAINT competitions_cohort_size CHECK (cohort_size IS NULL OR cohort_size >= 2),
    -- With a cohort size: an entry that carries a rating joins an open cohort whose first
    -- entrant's rating is within this distance of its own (the nearest), else opens one.
    ADD COLUMN rating_band bigint
        CONSTRAINT competitions_rating_band CHECK (rating_band IS NULL OR rating_band >= 0),
    -- A league's tiers, lowest first: [{"name": "bronze", "promote": 5, "relegate": 0,
    -- "prizes": [...]?}, ...] ('[]': no tiers).
    ADD COLUMN tiers       jsonb NOT NULL DEFAULT '[]',
    ADD CONSTRAINT competitions_window CHECK (
        (starts_at IS NULL AND ends_at IS NULL) OR ends_at > starts_at);

-- One run of a competition: its entrants and cohorts so far (the entry function decides both
-- under this row's lock), and, once closed, its frozen prize table and its digest, chained to
-- the previous closed run's.
CREATE TABLE competition_runs (
    competition_id text        COLLATE "C" NOT NULL REFERENCES competitions (competition_id),
    run            text        COLLATE "C" NOT NULL,
    entrants       integer     NOT NULL DEFAULT 0,
    cohorts        integer     NOT NULL DEFAULT 0,
    closed_at      timestamptz,
    -- The competition's prizes and tiers at the close, as the digest covers them.
    prizes         jsonb,
    tiers          jsonb,
    boards         integer,
    digest         text,
    previous       text,
    PRIMARY KEY (competition_id, run)
);
-- The closes still to make (competition/sql/close_due.sql), and the last ones made (the
-- console's closed runs, competition/sql/runs_recent.sql).
CREATE INDEX competition_runs_open ON competition_runs (run) WHERE closed_at IS NULL;
CREATE INDEX competition_runs_closed ON competition_runs (closed_at DESC)
    WHERE closed_at IS NOT NULL;

-- The cohorts of a run: their tier, the rating of the entrant that opened them (the band is
-- measured from it), and their members. `open` until full; the entry function finds an open
-- cohort of a tier by competition_cohorts_open, never by scanning the run's cohorts.
CREATE TABLE competition_cohorts (
    competition_id text    COLLATE "C" NOT NULL,
    run            text    COLLATE "C" NOT NULL,
    cohort         integer NOT NULL,
    tier           integer NOT NULL,
    anchor         bigint,
    members        integer NOT NULL DEFAULT 0,
    open           boolean NOT NULL DEFAULT true,
    PRIMARY KEY (competition_id, run, cohort),
    FOREIGN KEY (competition_id, run) REFERENCES competition_runs (competition_id, run)
);
CREATE INDEX competition_cohorts_open
    ON competition_cohorts (competition_id, run, tier, anchor, cohort) WHERE open;

-- Entries are per run now, with the tier and cohort they were placed in and the rating they
-- carried. Version 17's entries belong to the run '' (a board that never resets).
ALTER TABLE competition_entries
    ADD COLUMN run    text    COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN tier   integer NOT NULL DEFAULT 0,
    ADD COLUMN cohort integer,
    ADD COLUMN rating bigint,
    DROP CONSTRAINT competition_entries_pkey,
    ADD PRIMARY KEY (competition_id, run, user_id);
-- A player's entries across runs (their history).
CREATE INDEX competition_entries_user ON competition_entries (competition_id, user_id, run);

-- A league's players: the tier each is in now (0, the lowest, until a close moves them).
CREATE TABLE competition_players (
    competition_id text        COLLATE "C" NOT NULL REFERENCES competitions (competition_id),
    user_id        text        COLLATE "C" NOT NULL,
    tier           integer     NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (competition_id, user_id)
);

-- What a run's close moved: who, from which cohort and place, from which tier to which.
CREATE TABLE competition_moves (
    competition_id text    COLLATE "C" NOT NULL,
    run            text    COLLATE "C" NOT NULL,
    user_id        text    COLLATE "C" NOT NULL,
    cohort         integer,
    position       bigint  NOT NULL,
    from_tier      integer NOT NULL,
    to_tier        integer NOT NULL,
    PRIMARY KEY (competition_id, run, user_id)
);
CREATE INDEX competition_moves_user ON competition_moves (competition_id, user_id, run);

-- Entering a run: once per player and run, inside the run's window, never past the cap, into
-- a cohort that is never overfilled (competition/sql/functions/lb_competition_enter.sql, where
-- each step is explained). Its source is kept beside its caller, and
-- crates/core/tests/it/functions.rs checks that the database holds exactly that.
CREATE FUNCTION lb_competition_enter(p_competition text, p_user text, p_rating bigint)
RETURNS TABLE (outcome text, run text, seat integer, tier integer, cohort integer,
               new_cohort boolean, entered_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    c          record;
    run_board  text;
    v_run      text;
    v_start    timestamptz;
    prior      record;
    r          record;
    v_tier     integer := 0;
    v_cohort   integer;
    v_new      boolean := false;
    at         timestamptz;
BEGIN
    SELECT * INTO c FROM competitions WHERE competition_id = p_competition;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown', NULL::text, NULL::integer, NULL::integer,
                            NULL::integer, false, NULL::timestamptz;
        RETURN;
    END IF;
    run_board := lb_command_board(p_competition);
    v_run := substr(run_board, length(p_competition) + 2);
    SELECT e.seat, e.tier, e.cohort, e.entered_at INTO prior
    FROM competition_entries e
    WHERE e.competition_id = p_competition AND e.run = v_run AND e.user_id = p_user;
    IF FOUND THEN
        RETURN QUERY SELECT 'repeat', v_run, prior.seat, prior.tier, prior.cohort, false,
                            prior.entered_at;
        RETURN;
    END IF;
    at := clock_timestamp();
    IF v_run <> '' THEN
        v_start := to_timestamp(v_run, 'YYYYMMDD"T"HH24MISS"Z"')::timestamp AT TIME ZONE 'UTC';
    END IF;
    IF c.starts_at IS NOT NULL AND at < c.starts_at THEN
        RETURN QUERY SELECT 'not_started', v_run, NULL::integer, NULL::integer, NULL::integer,
                            false, NULL::timestamptz;
        RETURN;
    END IF;
    IF (c.ends_at IS NOT NULL AND at >= c.ends_at)
       OR (c.duration_s IS NOT NULL AND v_start IS NOT NULL AND at >= v_start + c.duration_s * interval '1 second') THEN
        RETURN QUERY SELECT 'ended', v_run, NULL::integer, NULL::integer, NULL::integer,
                            false, NULL::timestamptz;
        RETURN;
    END IF;
    IF jsonb_array_length(c.tiers) > 0 AND EXISTS (
        SELECT 1 FROM competition_runs o
        WHERE o.competition_id = p_competition AND o.run < v_run AND o.closed_at IS NULL
    ) THEN
        RETURN QUERY SELECT 'closing', v_run, NULL::integer, NULL::integer, NULL::integer,
                            false, NULL::timestamptz;
        RETURN;
    END IF;
    INSERT INTO competition_runs AS cr (competition_id, run) VALUES (p_competition, v_run)
    ON CONFLICT ON CONSTRAINT competition_runs_pkey DO NOTHING;
    SELECT * INTO r FROM competition_runs cr
    WHERE cr.competition_id = p_competition AND cr.run = v_run FOR UPDATE;
    SELECT e.seat, e.tier, e.cohort, e.entered_at INTO prior
    FROM competition_entries e
    WHERE e.competition_id = p_competition AND e.run = v_run AND e.user_id = p_user;
    IF FOUND THEN
        RETURN QUERY SELECT 'repeat', v_run, prior.seat, prior.tier, prior.cohort, false,
                            prior.entered_at;
        RETURN;
    END IF;
    IF c.max_size IS NOT NULL AND r.entrants >= c.max_size THEN
        RETURN QUERY SELECT 'full', v_run, NULL::integer, NULL::integer, NULL::integer,
                            false, NULL::timestamptz;
        RETURN;
    END IF;
    IF jsonb_array_length(c.tiers) > 0 THEN
        SELECT least(p.tier, jsonb_array_length(c.tiers) - 1) INTO v_tier
        FROM competition_players p
        WHERE p.competition_id = p_competition AND p.user_id = p_user;
        v_tier := coalesce(v_tier, 0);
    END IF;
    IF c.cohort_size IS NOT NULL THEN
        IF c.rating_band IS NULL OR p_rating IS NULL THEN
            SELECT k.cohort INTO v_cohort FROM competition_cohorts k
            WHERE k.competition_id = p_competition AND k.run = v_run AND k.tier = v_tier
              AND k.open AND k.anchor IS NULL
            ORDER BY k.cohort LIMIT 1;
        ELSE
            SELECT n.cohort INTO v_cohort FROM (
                (SELECT k.cohort, p_rating - k.anchor AS d FROM competition_cohorts k
                 WHERE k.competition_id = p_competition AND k.run = v_run AND k.tier = v_tier
                   AND k.open AND k.anchor BETWEEN p_rating - c.rating_band AND p_rating
                 ORDER BY k.anchor DESC, k.cohort LIMIT 1)
                UNION ALL
                (SELECT k.cohort, k.anchor - p_rating FROM competition_cohorts k
                 WHERE k.competition_id = p_competition AND k.run = v_run AND k.tier = v_tier
                   AND k.open AND k.anchor BETWEEN p_rating AND p_rating + c.rating_band
                 ORDER BY k.anchor, k.cohort LIMIT 1)
            ) n ORDER BY n.d, n.cohort LIMIT 1;
        END IF;
        IF v_cohort IS NULL THEN
            v_cohort := r.cohorts + 1;
            v_new := true;
            UPDATE competition_runs cr SET cohorts = v_cohort
            WHERE cr.competition_id = p_competition AND cr.run = v_run;
            INSERT INTO competition_cohorts (competition_id, run, cohort, tier, anchor)
            VALUES (p_competition, v_run, v_cohort, v_tier,
                    CASE WHEN c.rating_band IS NOT NULL THEN p_rating END);
        END IF;
        UPDATE competition_cohorts k
        SET members = k.members + 1, open = k.members + 1 < c.cohort_size
        WHERE k.competition_id = p_competition AND k.run = v_run AND k.cohort = v_cohort;
    END IF;
    UPDATE competition_runs cr SET entrants = cr.entrants + 1
    WHERE cr.competition_id = p_competition AND cr.run = v_run;
    RETURN QUERY
    INSERT INTO competition_entries AS e
        (competition_id, run, user_id, seat, tier, cohort, rating)
    VALUES (p_competition, v_run, p_user, r.entrants + 1, v_tier, v_cohort, p_rating)
    RETURNING 'entered'::text, e.run, e.seat, e.tier, e.cohort, v_new, e.entered_at;
END
$$;
