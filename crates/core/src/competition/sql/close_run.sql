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
           coalesce(k.tier, 0) AS tier
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
    RETURNING r.run
)
SELECT count(*) > 0 AS written FROM closed
