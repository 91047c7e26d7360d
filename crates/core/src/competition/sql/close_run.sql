-- A run's record, in the close's second transaction after close_freeze.sql (whose frozen rows
-- it reads): the moves of a league (in every cohort of tier t, the first `promote` positions
-- move to t + 1 unless t is the top tier, else the last `relegate` positions to t - 1 unless t
-- is the lowest; an entrant without a score has no position and stays), each player's tier
-- set from them, and the run's row closed with the prizes and tiers as they stand and one
-- digest over its lines (the same as verify_run.sql reads) chained to the previous closed run's. Writes nothing
-- when the run is closed already. Its row exists (close_run_row.sql, the statement before).
-- $1 competition id, $2 run (period id).
WITH c AS (
    SELECT prizes, tiers FROM competitions WHERE competition_id = $1
),
boards AS MATERIALIZED (
    SELECT p.period, p.entries, encode(p.digest, 'hex') AS digest, k.cohort,
           coalesce(k.tier, 0) AS tier, p.columns AS defs
    FROM period_closes p
    LEFT JOIN competition_cohorts k
        ON k.competition_id = $1 AND k.run = $2 AND p.period = $2 || '~' || lpad(k.cohort::text, 6, '0')
    WHERE p.board_id = $1 AND (p.period = $2 OR (p.period > $2 || '~' AND p.period < $2 || '~~'))
),
moves AS MATERIALIZED (
    SELECT s.user_id, b.cohort, s.position, b.tier AS from_tier,
           CASE WHEN s.position <= coalesce((c.tiers -> b.tier ->> 'promote')::int, 0)
                     AND b.tier < jsonb_array_length(c.tiers) - 1 THEN b.tier + 1
                WHEN s.position > b.entries - coalesce((c.tiers -> b.tier ->> 'relegate')::int, 0)
                     AND b.tier > 0 THEN b.tier - 1
           END AS to_tier
    FROM boards b
    CROSS JOIN c
    JOIN period_standings s ON s.board_id = $1 AND s.period = b.period
    WHERE jsonb_array_length(c.tiers) > 0
      AND NOT EXISTS (SELECT 1 FROM competition_runs r
                      WHERE r.competition_id = $1 AND r.run = $2 AND r.closed_at IS NOT NULL)
),
moved AS (
    INSERT INTO competition_moves
        (competition_id, run, user_id, cohort, position, from_tier, to_tier)
    SELECT $1, $2, user_id, cohort, position, from_tier, to_tier
    FROM moves WHERE to_tier IS NOT NULL
    RETURNING user_id, to_tier
),
tiers_now AS (
    INSERT INTO competition_players AS p (competition_id, user_id, tier)
    SELECT $1, user_id, to_tier FROM moved
    ON CONFLICT (competition_id, user_id) DO UPDATE SET tier = EXCLUDED.tier, updated_at = now()
),
lines AS (
    SELECT 0 AS part, ''::text COLLATE "C" AS k, 'run ' || $2 AS line
    UNION ALL SELECT 1, '', 'prizes ' || c.prizes::text FROM c
    UNION ALL SELECT 2, '', 'tiers ' || c.tiers::text FROM c
    UNION ALL SELECT 3, b.period, 'board ' || b.period || ' ' || b.tier || ' ' || b.entries
                                  || ' ' || b.digest FROM boards b
    UNION ALL SELECT 4, m.user_id, 'move ' || m.user_id || ' ' || m.from_tier || ' '
                                   || m.to_tier FROM moves m WHERE m.to_tier IS NOT NULL
),
previous AS (
    SELECT r.digest FROM competition_runs r
    WHERE r.competition_id = $1 AND r.run < $2 AND r.closed_at IS NOT NULL
    ORDER BY r.run DESC LIMIT 1
),
closed AS (
    UPDATE competition_runs r
    SET closed_at = clock_timestamp(), prizes = c.prizes, tiers = c.tiers,
        boards = (SELECT count(*) FROM boards), previous = (SELECT digest FROM previous),
        digest = encode(sha256(convert_to(
            coalesce((SELECT digest FROM previous), '') || E'\n'
            || (SELECT string_agg(line, E'\n' ORDER BY part, k) FROM lines), 'UTF8')), 'hex')
    FROM c
    WHERE r.competition_id = $1 AND r.run = $2 AND r.closed_at IS NULL
    RETURNING r.run, r.closed_at, r.digest, r.previous
),
-- The event log (migration V20, docs/api.md "Events"): one `competition.closed`, written only
-- by the statement that closed the run, its id derived from the run (lb_event_id): the run's
-- digests, each board (cohort) with its first standings (lb_event_first) and the prize each
-- rank earns (the cohort's tier's table, else the competition's, as the results read them),
-- and the moves. Bounded, however large the league: the first 100 boards and 1,000 moves by
-- cohort and position, with their totals (the rest: GET /v1/competitions/{id}/results).
logged AS (
    INSERT INTO event_queue (event_id, kind, board_id, target, payload)
    SELECT lb_event_id('competition.closed:' || $1 || ':' || $2), 'competition.closed', $1,
           $1 || '~' || $2,
           jsonb_strip_nulls(jsonb_build_object(
               'run', $2,
               'closed_at', to_char(x.closed_at AT TIME ZONE 'UTC',
                                    'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
               'digest', x.digest,
               'previous', x.previous,
               'entries', (SELECT coalesce(sum(entries), 0) FROM boards),
               'boards_total', (SELECT count(*) FROM boards),
               'boards', coalesce((
                   SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                              'cohort', b.cohort, 'tier', b.tier, 'entries', b.entries,
                              'digest', b.digest,
                              'standings', coalesce((
                                  SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                             'position', st.position, 'rank', st.rank,
                                             'user_id', st.user_id, 'score', st.score,
                                             'scores', lb_event_scores(b.defs, st.score,
                                                                       st.col2, st.col3),
                                             'prize', (
                                                 SELECT pz FROM c, jsonb_array_elements(
                                                     coalesce(nullif(c.tiers -> b.tier -> 'prizes',
                                                                     'null'::jsonb),
                                                              c.prizes, '[]'::jsonb)) pz
                                                 WHERE (pz ->> 'from')::bigint <= st.rank
                                                   AND st.rank <= (pz ->> 'to')::bigint
                                                 LIMIT 1)))
                                         ORDER BY st.position)
                                  FROM period_standings st
                                  WHERE st.board_id = $1 AND st.period = b.period
                                    AND st.position <= lb_event_first()), '[]'::jsonb)))
                          ORDER BY b.period)
                   FROM (SELECT * FROM boards ORDER BY period LIMIT 100) b), '[]'::jsonb),
               'moves_total', (SELECT count(*) FROM moves WHERE to_tier IS NOT NULL),
               'moves', coalesce((
                   SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                              'user_id', m.user_id, 'cohort', m.cohort, 'position', m.position,
                              'from_tier', m.from_tier, 'to_tier', m.to_tier))
                          ORDER BY m.cohort, m.position)
                   FROM (SELECT * FROM moves WHERE to_tier IS NOT NULL
                         ORDER BY cohort, position LIMIT 1000) m), '[]'::jsonb)))
    FROM closed x
)
SELECT count(*) > 0 AS written FROM closed
