-- `lbctl period verify`: the frozen standings checked twice. (1) Their digest recomputed from
-- the rows as they are now, against the period's seal: the digest written at the close, or the
-- newest re-seal of an erasure since (migration V13, moderation_erase_reseal.sql), every one
-- of which must have found the rows matching the seal before it. (2) Each row against the
-- events: the newest event of the user in the period (by version) must carry the row's tuple
-- (score and other columns) and version, or a lower version by no more than the user's bans and unbans between that
-- event and the close (each re-versions the user's entries and writes no event); and every
-- user with events in the period but no row must be explained by an erasure (the user is an
-- erasure's pseudonym), a ban in force at the close or a removal from the period, counted under
-- the first of these that applies. An erasure after the close replaces a row's user id with the
-- pseudonym its events carry too, so (2) still holds for it: `erased` counts those rows.
-- Scores held for review in the period are counted beside (3).
-- $1 board id, $2 period id (or a cohort's period key, <period>~<cohort>: its first 16 characters
-- are the period's start).
--
-- Hash joins over the period's rows and events, whatever their number (the events are found
-- by the BRIN index on created_at: from an hour before the period's start, which a command's
-- transaction may have begun before it read the clock, to the close; then by board).
WITH c AS (
    SELECT closed_at, entries,
           coalesce((SELECT r.digest FROM period_reseals r
                     WHERE r.board_id = $1 AND r.period = $2
                     ORDER BY r.id DESC LIMIT 1), digest) AS digest,
           to_timestamp(left($2, 16), 'YYYYMMDD"T"HH24MISS"Z"')::timestamp AT TIME ZONE 'UTC' AS starts_at
    FROM period_closes WHERE board_id = $1 AND period = $2
),
reseals AS MATERIALIZED (
    SELECT prior_matches FROM period_reseals WHERE board_id = $1 AND period = $2
),
frozen AS MATERIALIZED (
    SELECT position, user_id, score, columns, col2, col3, tie, version
    FROM period_standings WHERE board_id = $1 AND period = $2
),
latest AS MATERIALIZED (
    SELECT DISTINCT ON (e.user_id) e.user_id, e.score, coalesce(e.col2, 0) AS col2,
           coalesce(e.col3, 0) AS col3, e.version, e.created_at
    FROM score_events e, c
    WHERE e.created_at >= c.starts_at - interval '1 hour' AND e.created_at <= c.closed_at
      AND e.board_id = $1 || '~' || $2
    ORDER BY e.user_id, e.version DESC
),
erasures AS MATERIALIZED (
    SELECT DISTINCT user_id FROM moderation_actions WHERE action = 'erase'
),
joined AS MATERIALIZED (
    SELECT f.user_id AS frozen_user, l.user_id AS event_user,
           coalesce(f.score = l.score AND f.col2 = l.col2 AND f.col3 = l.col3
                    AND (f.version = l.version OR (
               f.version > l.version
               AND f.version - l.version <= (
                   SELECT count(*) FROM moderation_actions m, c
                   WHERE m.user_id = f.user_id AND m.action IN ('ban', 'unban')
                     -- A ban's `at` is read after its table lock was granted, so after every
                     -- command it waited for committed (moderation_result.sql): a ban that
                     -- re-versioned the row after this event is at or after the event's time.
                     AND m.at >= l.created_at
                     AND m.at <= c.closed_at))), false) AS same,
           coalesce(f.user_id, l.user_id) IN (SELECT user_id FROM erasures) AS erased
    FROM frozen f FULL JOIN latest l ON l.user_id = f.user_id
),
left_out AS MATERIALIZED (
    SELECT l.user_id,
           CASE
               WHEN l.erased THEN 'erased'
               -- Banned at the close: the user's last ban or unban before it was a ban.
               WHEN (SELECT m.action FROM moderation_actions m
                     WHERE m.user_id = l.user_id AND m.action IN ('ban', 'unban')
                       AND m.at <= (SELECT closed_at FROM c)
                     ORDER BY m.at DESC LIMIT 1) = 'ban' THEN 'banned'
               -- Removed from the period before the close (and no command since: no row).
               WHEN EXISTS (
                   SELECT 1 FROM moderation_actions m
                   WHERE m.user_id = l.user_id AND m.action = 'remove'
                     AND m.board_id = $1 || '~' || $2 AND m.at <= (SELECT closed_at FROM c)
               ) THEN 'removed'
           END AS why
    FROM (SELECT event_user AS user_id, erased FROM joined WHERE frozen_user IS NULL) l
)
SELECT
    (SELECT count(*) FROM frozen) AS rows,
    (SELECT entries FROM c) AS entries,
    sha256(convert_to(coalesce(
        (SELECT string_agg(lb_standings_line(position, user_id, score, tie, columns, col2, col3),
                           E'\n' ORDER BY position) FROM frozen), ''), 'UTF8'))
        = (SELECT digest FROM c) AS digest_matches,
    (SELECT count(*) FROM reseals) AS resealed,
    (SELECT count(*) FROM reseals WHERE NOT prior_matches) AS reseals_broken,
    (SELECT count(*) FROM joined WHERE frozen_user IS NOT NULL AND event_user IS NOT NULL
                                   AND same) AS agree,
    (SELECT count(*) FROM joined WHERE frozen_user IS NOT NULL
                                   AND (event_user IS NULL OR NOT same)) AS disagree,
    (SELECT count(*) FROM joined WHERE frozen_user IS NOT NULL AND erased) AS erased,
    (SELECT count(*) FROM left_out) AS left_out,
    (SELECT count(*) FROM left_out WHERE why = 'erased') AS left_out_erased,
    (SELECT count(*) FROM left_out WHERE why = 'banned') AS left_out_banned,
    (SELECT count(*) FROM left_out WHERE why = 'removed') AS left_out_removed,
    (SELECT count(*) FROM left_out WHERE why IS NULL) AS left_out_unexplained,
    -- Scores held for review in the period (migration V16): never applied, so neither in the
    -- standings nor among the events; counted with their reason (their state).
    (SELECT count(*) FROM held_scores
     WHERE period_board = $1 || '~' || $2 AND state = 'pending') AS held_pending,
    (SELECT count(*) FROM held_scores
     WHERE period_board = $1 || '~' || $2 AND state = 'rejected') AS held_rejected
FROM c
