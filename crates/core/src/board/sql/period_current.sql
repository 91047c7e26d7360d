-- A board's current period and the one before it, by the database clock (now(): the read's
-- statement), and how long until the current one ends: at the schedule's next boundary, or at
-- the next start written ahead in board_resets (a cron boundary, or a manual reset within the
-- second), whichever comes first. NULL when neither is known (a board reset only by hand: the
-- api keeps the answer no longer than its definition cache, which also bounds how late it sees
-- a manual reset). No row for a board that never resets, or is undeclared.
-- $1 board id (a board, never one of its periods).
--
-- The next boundary of a daily, weekly or monthly board is computed in the board's zone (local
-- midnight plus a local day, week or month), so a day of 23 or 25 hours ends where it should.
WITH d AS (
    SELECT reset, time_zone, now() AT TIME ZONE time_zone AS local_now
    FROM board_definitions
    WHERE board_id = $1 AND reset <> 'never'
),
c AS (
    SELECT lb_period_start($1, d.reset, d.time_zone, now()) AS starts_at,
           -- least() skips NULLs: a schedule without a computed boundary, or no start ahead.
           least(
               CASE
                   WHEN d.reset = 'daily' THEN (date_trunc('day', d.local_now) + interval '1 day')
                                               AT TIME ZONE d.time_zone
                   WHEN d.reset = 'weekly' THEN (date_trunc('week', d.local_now)
                                                 + interval '1 week') AT TIME ZONE d.time_zone
                   WHEN d.reset = 'monthly' THEN (date_trunc('month', d.local_now)
                                                  + interval '1 month') AT TIME ZONE d.time_zone
                   WHEN d.reset LIKE 'every %' THEN
                       to_timestamp((floor(extract(epoch FROM now())
                                           / substring(d.reset FROM '[0-9]+')::bigint) + 1)
                                    * substring(d.reset FROM '[0-9]+')::bigint)
               END,
               (SELECT min(r.starts_at) FROM board_resets r
                WHERE r.board_id = $1 AND r.starts_at > now())) AS ends_at
    FROM d
)
SELECT lb_period_id(c.starts_at) AS current,
       -- The period that starts at ends_at (the reconciler seals it ahead: reconciler/periods.rs).
       lb_period_id(c.ends_at) AS next,
       -- The last archived period (V8): it and every period before it are read from
       -- PostgreSQL. Periods are archived oldest first; the primary key finds it backwards.
       (SELECT max(a.period) FROM period_closes a
        WHERE a.board_id = $1 AND a.archived_at IS NOT NULL) AS archived_through,
       lb_period_id(lb_period_start($1, d.reset, d.time_zone,
                                    c.starts_at - interval '1 microsecond')) AS previous,
       -- greatest() would turn the NULL of a manual board into 0.
       CASE WHEN c.ends_at IS NOT NULL
            THEN greatest(0, ceil(extract(epoch FROM c.ends_at - now()) * 1000))::bigint
       END AS ends_in_ms
FROM d, c
