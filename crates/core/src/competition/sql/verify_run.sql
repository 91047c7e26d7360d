-- `lbctl competition verify`, one closed run (competition/verify.rs), read from what the close
-- wrote: its digest recomputed from its lines (the frozen prizes and tiers, each board's close
-- as period_closes holds it, the recorded moves: the same lines as close_run.sql) against the
-- recorded one; its `previous` against the digest of the closed run before it (the chain);
-- its boards counted against the close's count; and its moves recomputed from the frozen
-- standings and the frozen tiers against the recorded ones. Each board's own standings are
-- verified apart (board/sql/period_verify.sql, by its period key).
-- $1 competition id, $2 run.
WITH r AS (
    SELECT prizes, tiers, boards, digest, previous FROM competition_runs
    WHERE competition_id = $1 AND run = $2 AND closed_at IS NOT NULL
),
previous AS (
    SELECT p.digest FROM competition_runs p
    WHERE p.competition_id = $1 AND p.run < $2 AND p.closed_at IS NOT NULL
    ORDER BY p.run DESC LIMIT 1
),
boards AS MATERIALIZED (
    SELECT p.period, p.entries, encode(p.digest, 'hex') AS digest, k.cohort,
           coalesce(k.tier, 0) AS tier
    FROM period_closes p
    LEFT JOIN competition_cohorts k
        ON k.competition_id = $1 AND k.run = $2 AND p.period = $2 || '~' || lpad(k.cohort::text, 6, '0')
    WHERE p.board_id = $1 AND (p.period = $2 OR (p.period > $2 || '~' AND p.period < $2 || '~~'))
),
expected AS MATERIALIZED (
    SELECT s.user_id, b.cohort, s.position, b.tier AS from_tier,
           CASE WHEN s.position <= coalesce((r.tiers -> b.tier ->> 'promote')::int, 0)
                     AND b.tier < jsonb_array_length(r.tiers) - 1 THEN b.tier + 1
                WHEN s.position > b.entries - coalesce((r.tiers -> b.tier ->> 'relegate')::int, 0)
                     AND b.tier > 0 THEN b.tier - 1
           END AS to_tier
    FROM boards b
    CROSS JOIN r
    JOIN period_standings s ON s.board_id = $1 AND s.period = b.period
    WHERE jsonb_array_length(r.tiers) > 0
),
recorded AS MATERIALIZED (
    SELECT user_id, cohort, position, from_tier, to_tier FROM competition_moves
    WHERE competition_id = $1 AND run = $2
),
lines AS (
    SELECT 0 AS part, ''::text COLLATE "C" AS k, 'run ' || $2 AS line
    UNION ALL SELECT 1, '', 'prizes ' || r.prizes::text FROM r
    UNION ALL SELECT 2, '', 'tiers ' || r.tiers::text FROM r
    UNION ALL SELECT 3, b.period, 'board ' || b.period || ' ' || b.tier || ' ' || b.entries
                                  || ' ' || b.digest FROM boards b
    UNION ALL SELECT 4, m.user_id, 'move ' || m.user_id || ' ' || m.from_tier || ' '
                                   || m.to_tier FROM recorded m
)
SELECT
    (SELECT count(*) FROM boards) AS boards,
    (SELECT boards FROM r)::bigint AS boards_closed,
    (SELECT digest FROM r) = encode(sha256(convert_to(
        coalesce((SELECT previous FROM r), '') || E'\n'
        || (SELECT string_agg(line, E'\n' ORDER BY part, k) FROM lines), 'UTF8')), 'hex')
        AS digest_matches,
    (SELECT previous FROM r) IS NOT DISTINCT FROM (SELECT digest FROM previous) AS chained,
    (SELECT count(*) FROM recorded) AS moves,
    (SELECT count(*) FROM (
        (SELECT * FROM expected WHERE to_tier IS NOT NULL EXCEPT SELECT * FROM recorded)
        UNION ALL
        (SELECT * FROM recorded EXCEPT SELECT * FROM expected WHERE to_tier IS NOT NULL)
    ) d) AS moves_disagree
FROM r
