-- A closed run's record: its boards, the entries frozen over them, its moves and digests. No
-- row: the run is not closed. $1 competition id, $2 run.
SELECT r.run, to_char(r.closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS closed_at,
       r.boards, r.digest, r.previous,
       coalesce((SELECT sum(p.entries) FROM period_closes p
                 WHERE p.board_id = $1
                   AND (p.period = $2 OR (p.period > $2 || '~' AND p.period < $2 || '~~'))),
                0)::bigint AS entries,
       (SELECT count(*) FROM competition_moves m
        WHERE m.competition_id = $1 AND m.run = $2) AS moves
FROM competition_runs r
WHERE r.competition_id = $1 AND r.run = $2 AND r.closed_at IS NOT NULL
