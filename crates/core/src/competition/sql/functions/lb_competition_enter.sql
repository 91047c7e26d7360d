-- lb_competition_enter: a player's entry into the run of a competition open now (issue 39),
-- decided in one call: VOLATILE, so each statement below reads what committed before it, and
-- the run's row lock (taken before the cap and the cohort are decided) orders concurrent
-- entries of one run: the cap is never passed and a cohort never overfilled, never
-- read-then-write. Called by competition/sql/enter.sql.
--
--   1. The run is the board's period open now (lb_command_board, under the period lock shared,
--      as a score's: an entry belongs to the run open at its commit, and a close waits for it).
--   2. A repeat (this player in this run) answers the first entry, before and after the lock.
--   3. The window: the competition's starts_at / ends_at, or the run's duration_s.
--   4. A league's entry waits for the previous run's close ('closing'): the tiers it places
--      players by are that close's.
--   5. The cap: the run's entrants under its row lock ('full').
--   6. The tier: a league player's own (competition_players), 0 until a close moves them.
--   7. The cohort, among the open ones of the tier: the first (cohorts fill one at a time), or
--      with a rating and a band, the one whose first entrant's rating is nearest within the
--      band (two probes of competition_cohorts_open); none fits: a new cohort, numbered by the
--      run's counter. A cohort closes to new members when full.
--
-- Its source exactly as migration V18 defined it (migrations/V18__competition_runs_cohorts_leagues.sql).
-- Migrations are history: a change needs a new migration AND this file;
-- crates/core/tests/it/functions.rs checks that the migrated database holds this definition.
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
