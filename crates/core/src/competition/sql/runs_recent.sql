-- The last closed runs over every competition, newest first (the console's closed runs, by
-- competition_runs_closed): each with its boards, the entries frozen over them, its moves, its
-- frozen prize ranges and its digests. $1 at most this many.
SELECT r.competition_id, r.run,
       to_char(r.closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS closed_at,
       r.boards, r.digest, r.previous,
       coalesce(jsonb_array_length(r.prizes), 0) AS prize_ranges,
       coalesce((SELECT sum(p.entries) FROM period_closes p
                 WHERE p.board_id = r.competition_id
                   AND (p.period = r.run
                        OR (p.period > r.run || '~' AND p.period < r.run || '~~'))),
                0)::bigint AS entries,
       (SELECT count(*) FROM competition_moves m
        WHERE m.competition_id = r.competition_id AND m.run = r.run) AS moves
FROM competition_runs r
WHERE r.closed_at IS NOT NULL
ORDER BY r.closed_at DESC
LIMIT $1
