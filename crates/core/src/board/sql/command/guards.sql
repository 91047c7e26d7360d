-- The guards of head.sql's command (operator.rs's guarded statements): an attempt's verdict
-- and a competition's window and entry. Why a command may not go ahead before its operator's
-- rule is asked: `barred`. A command with no attempt on a board not known to be a competition
-- runs unguarded.sql in their place instead (about 15% less PostgreSQL CPU per command:
-- docs/performance.md).
attempt AS (
    -- The attempt the command comes from ($20, issue 38; NULL: none, and no row), locked: two
    -- commands with one attempt are judged one after the other.
    SELECT user_id, board_id, period_board, used_by, expires_at,
           started_at + min_duration_ms * interval '1 millisecond' AS ready_at
    FROM attempts
    WHERE attempt_id = $20
    FOR UPDATE
),
attempt_verdict AS (
    -- Why the attempt refuses the command (NULL: it does not, or there is none), judged in the
    -- order of board/sql/attempt_use.sql (the same verdicts, for a command whose board also
    -- reviews scores, board/guard/): unknown, another player's or board's, used by another
    -- command (by this event id: a repeat, which `prior` answers), past its ttl or its period
    -- (the command would land in another period than the one it started in), sooner than its
    -- minimum duration. Times by clock_timestamp(), not the transaction's start.
    SELECT CASE
               WHEN $20::uuid IS NULL THEN NULL
               WHEN a.user_id IS NULL THEN 'attempt_unknown'
               WHEN a.user_id <> $3 OR a.board_id <> $2 THEN 'attempt_foreign'
               WHEN a.used_by = $1 THEN NULL
               WHEN a.used_by IS NOT NULL THEN 'attempt_used'
               WHEN a.expires_at <= clock_timestamp()
                    OR a.period_board <> (SELECT run FROM period) THEN 'attempt_expired'
               WHEN a.ready_at > clock_timestamp() THEN 'attempt_too_fast'
           END AS refusal,
           a.used_by,
           greatest(ceil(extract(epoch FROM a.ready_at - clock_timestamp()) * 1000), 0)::bigint
               AS wait_ms
    FROM (SELECT 1) one LEFT JOIN attempt a ON true
),
admission AS (
    -- A competition's board (migrations V17, V18, competition/): scores only inside its window
    -- (a recurring one's: duration_s from its run's start) and, when it requires entry, only
    -- from an entrant of the run. NULL: admitted, or not a competition.
    SELECT CASE
               WHEN c.starts_at IS NOT NULL AND clock_timestamp() < c.starts_at
                   THEN 'competition_not_started'
               WHEN c.ends_at IS NOT NULL AND clock_timestamp() >= c.ends_at
                   THEN 'competition_ended'
               WHEN c.duration_s IS NOT NULL AND p.run_id <> '' AND clock_timestamp()
                        >= to_timestamp(p.run_id, 'YYYYMMDD"T"HH24MISS"Z"')::timestamp
                           AT TIME ZONE 'UTC' + c.duration_s * interval '1 second'
                   THEN 'competition_ended'
               WHEN c.entry_required AND NOT EXISTS (
                   SELECT 1 FROM competition_entries e
                   WHERE e.competition_id = $2 AND e.run = p.run_id AND e.user_id = $3
               ) THEN 'competition_not_entered'
           END AS refusal
    FROM (SELECT 1) one LEFT JOIN competitions c ON c.competition_id = $2
         LEFT JOIN period p ON true
),
barred AS (
    -- Why the command may not go ahead before its operator's rule is asked: its attempt's
    -- verdict, then its competition's.
    SELECT coalesce((SELECT refusal FROM attempt_verdict), (SELECT refusal FROM admission))
        AS why
),
