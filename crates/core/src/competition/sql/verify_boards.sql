-- Every board of a closed run verified at once (competition/verify.rs): for each of its period
-- keys (<period>, or <period>~<cohort> per cohort), exactly the checks and counts of
-- board/sql/period_verify.sql, which says what each one means; one row per key. The run's
-- events are read once (the BRIN index on created_at, from an hour before the run's start to
-- its last close, then joined to their cohort by board id) and every check is grouped by key:
-- period_verify.sql run per cohort read the run's events once per cohort (2,000 cohorts of 50:
-- 43.6 s, docs/performance.md).
-- $1 competition (board) id, $2 run (period id).
WITH c AS MATERIALIZED (
    SELECT p.period AS key, $1 || '~' || p.period AS stored, p.closed_at, p.entries,
           coalesce((SELECT r.digest FROM period_reseals r
                     WHERE r.board_id = $1 AND r.period = p.period
                     ORDER BY r.id DESC LIMIT 1), p.digest) AS digest
    FROM period_closes p
    WHERE p.board_id = $1 AND (p.period = $2 OR (p.period > $2 || '~' AND p.period < $2 || '~~'))
),
bounds AS (
    SELECT to_timestamp($2, 'YYYYMMDD"T"HH24MISS"Z"')::timestamp AT TIME ZONE 'UTC' AS starts_at,
           (SELECT max(closed_at) FROM c) AS closed_at
),
reseals AS MATERIALIZED (
    SELECT r.period AS key, count(*) AS resealed, count(*) FILTER (WHERE NOT r.prior_matches)
        AS broken
    FROM period_reseals r
    WHERE r.board_id = $1 AND r.period IN (SELECT key FROM c)
    GROUP BY r.period
),
frozen AS MATERIALIZED (
    SELECT s.period AS key, s.position, s.user_id, s.score, s.columns, s.col2, s.col3, s.tie,
           s.version
    FROM period_standings s
    WHERE s.board_id = $1 AND s.period IN (SELECT key FROM c)
),
sealed AS (
    SELECT f.key, count(*) AS rows,
           sha256(convert_to(string_agg(lb_standings_line(f.position, f.user_id, f.score, f.tie,
                                                          f.columns, f.col2, f.col3),
                                        E'\n' ORDER BY f.position), 'UTF8')) AS digest
    FROM frozen f
    GROUP BY f.key
),
latest AS MATERIALIZED (
    SELECT DISTINCT ON (c.key, e.user_id) c.key, c.closed_at, e.user_id, e.score,
           coalesce(e.col2, 0) AS col2, coalesce(e.col3, 0) AS col3, e.version, e.created_at
    FROM score_events e
    JOIN c ON c.stored = e.board_id
    CROSS JOIN bounds b
    WHERE e.created_at >= b.starts_at - interval '1 hour' AND e.created_at <= b.closed_at
      AND e.created_at <= c.closed_at
    ORDER BY c.key, e.user_id, e.version DESC
),
erasures AS MATERIALIZED (
    SELECT DISTINCT user_id FROM moderation_actions WHERE action = 'erase'
),
joined AS MATERIALIZED (
    SELECT coalesce(f.key, l.key) AS key, f.user_id AS frozen_user, l.user_id AS event_user,
           coalesce(f.score = l.score AND f.col2 = l.col2 AND f.col3 = l.col3
                    AND (f.version = l.version OR (
               f.version > l.version
               AND f.version - l.version <= (
                   SELECT count(*) FROM moderation_actions m
                   WHERE m.user_id = f.user_id AND m.action IN ('ban', 'unban')
                     AND m.at >= l.created_at
                     AND m.at <= l.closed_at))), false) AS same,
           coalesce(f.user_id, l.user_id) IN (SELECT user_id FROM erasures) AS erased
    FROM frozen f FULL JOIN latest l ON l.key = f.key AND l.user_id = f.user_id
),
left_out AS MATERIALIZED (
    SELECT j.key,
           CASE
               WHEN j.erased THEN 'erased'
               WHEN (SELECT m.action FROM moderation_actions m
                     WHERE m.user_id = j.event_user AND m.action IN ('ban', 'unban')
                       AND m.at <= c.closed_at
                     ORDER BY m.at DESC LIMIT 1) = 'ban' THEN 'banned'
               WHEN EXISTS (
                   SELECT 1 FROM moderation_actions m
                   WHERE m.user_id = j.event_user AND m.action = 'remove'
                     AND m.board_id = c.stored AND m.at <= c.closed_at
               ) THEN 'removed'
           END AS why
    FROM joined j JOIN c ON c.key = j.key
    WHERE j.frozen_user IS NULL
),
judged AS (
    SELECT key,
           count(*) FILTER (WHERE frozen_user IS NOT NULL AND event_user IS NOT NULL AND same)
               AS agree,
           count(*) FILTER (WHERE frozen_user IS NOT NULL AND (event_user IS NULL OR NOT same))
               AS disagree,
           count(*) FILTER (WHERE frozen_user IS NOT NULL AND erased) AS erased
    FROM joined
    GROUP BY key
),
explained AS (
    SELECT key, count(*) AS left_out,
           count(*) FILTER (WHERE why = 'erased') AS erased,
           count(*) FILTER (WHERE why = 'banned') AS banned,
           count(*) FILTER (WHERE why = 'removed') AS removed,
           count(*) FILTER (WHERE why IS NULL) AS unexplained
    FROM left_out
    GROUP BY key
),
held AS (
    SELECT c.key, count(*) FILTER (WHERE h.state = 'pending') AS pending,
           count(*) FILTER (WHERE h.state = 'rejected') AS rejected
    FROM held_scores h JOIN c ON c.stored = h.period_board
    GROUP BY c.key
)
SELECT c.key AS period,
       coalesce(s.rows, 0) AS rows,
       c.entries,
       coalesce(s.digest, sha256(convert_to('', 'UTF8'))) = c.digest AS digest_matches,
       coalesce(r.resealed, 0) AS resealed,
       coalesce(r.broken, 0) AS reseals_broken,
       coalesce(j.agree, 0) AS agree,
       coalesce(j.disagree, 0) AS disagree,
       coalesce(j.erased, 0) AS erased,
       coalesce(x.left_out, 0) AS left_out,
       coalesce(x.erased, 0) AS left_out_erased,
       coalesce(x.banned, 0) AS left_out_banned,
       coalesce(x.removed, 0) AS left_out_removed,
       coalesce(x.unexplained, 0) AS left_out_unexplained,
       coalesce(h.pending, 0) AS held_pending,
       coalesce(h.rejected, 0) AS held_rejected
FROM c
LEFT JOIN sealed s ON s.key = c.key
LEFT JOIN reseals r ON r.key = c.key
LEFT JOIN judged j ON j.key = c.key
LEFT JOIN explained x ON x.key = c.key
LEFT JOIN held h ON h.key = c.key
ORDER BY c.key
