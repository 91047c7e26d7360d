-- `lbctl period verify`: the frozen standings checked twice. (1) Their digest recomputed from
-- the rows as they are now, against the one written at the close. (2) Each row against the
-- events: the newest event of the user in the period (by version) must carry the row's score
-- and version; and every user with events in the period but no row must be explained by a
-- removal or a ban in force at the close (or have no entry left: an erasure). An erasure after
-- the close replaces a row's user id with the pseudonym its events carry too, so (2) still
-- holds for it while (1) no longer matches: `erased` counts those rows.
-- $1 board id, $2 period id.
WITH c AS (
    SELECT closed_at, digest, entries FROM period_closes WHERE board_id = $1 AND period = $2
),
rows AS (
    SELECT position, user_id, score, tie, version
    FROM period_standings WHERE board_id = $1 AND period = $2
),
latest AS (
    SELECT DISTINCT ON (user_id) user_id, score, version
    FROM score_events
    WHERE board_id = $1 || '~' || $2 AND created_at <= (SELECT closed_at FROM c)
    ORDER BY user_id, version DESC
),
erasures AS (
    SELECT user_id FROM moderation_actions WHERE action = 'erase'
)
SELECT
    (SELECT count(*) FROM rows) AS rows,
    (SELECT entries FROM c) AS entries,
    sha256(convert_to(coalesce(
        (SELECT string_agg(lb_standings_line(position, user_id, score, tie), E'\n'
                           ORDER BY position) FROM rows), ''), 'UTF8'))
        = (SELECT digest FROM c) AS digest_matches,
    (SELECT count(*) FROM rows r JOIN latest l USING (user_id)
     WHERE (l.score, l.version) = (r.score, r.version)) AS agree,
    (SELECT count(*) FROM rows r LEFT JOIN latest l USING (user_id)
     WHERE l.user_id IS NULL OR (l.score, l.version) <> (r.score, r.version)) AS disagree,
    (SELECT count(*) FROM rows r WHERE r.user_id IN (SELECT user_id FROM erasures)) AS erased,
    (SELECT count(*) FROM latest l
     WHERE NOT EXISTS (SELECT 1 FROM rows r WHERE r.user_id = l.user_id)) AS left_out,
    (SELECT count(*) FROM latest l
     WHERE NOT EXISTS (SELECT 1 FROM rows r WHERE r.user_id = l.user_id)
       -- Banned at the close: the user's last ban or unban before it was a ban.
       AND (SELECT m.action FROM moderation_actions m
            WHERE m.user_id = l.user_id AND m.action IN ('ban', 'unban')
              AND m.at <= (SELECT closed_at FROM c)
            ORDER BY m.at DESC LIMIT 1) IS DISTINCT FROM 'ban'
       -- Removed from the period before the close (and no command since: it has no row).
       AND NOT EXISTS (
           SELECT 1 FROM moderation_actions m
           WHERE m.user_id = l.user_id AND m.action = 'remove'
             AND m.board_id = $1 || '~' || $2 AND m.at <= (SELECT closed_at FROM c)
       )
       AND l.user_id NOT IN (SELECT user_id FROM erasures)) AS left_out_unexplained
FROM c
