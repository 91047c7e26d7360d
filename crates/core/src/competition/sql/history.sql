-- A player's history in a competition (competition/results.rs): each run entered, newest
-- first, with the tier and cohort it was placed in, its frozen place when the run is closed,
-- and the move the close made; and the tier the player is in now.
-- $1 competition id, $2 user id, $3 at most this many runs.
SELECT e.run, e.tier, e.cohort, e.seat,
       to_char(e.entered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS entered_at,
       r.closed_at IS NOT NULL AS closed,
       s.position, s.rank, s.score,
       m.to_tier,
       (SELECT p.tier FROM competition_players p
        WHERE p.competition_id = $1 AND p.user_id = $2) AS tier_now
FROM competition_entries e
LEFT JOIN competition_runs r ON r.competition_id = e.competition_id AND r.run = e.run
LEFT JOIN period_standings s
    ON s.board_id = e.competition_id
   AND s.period = e.run || coalesce('~' || lpad(e.cohort::text, 6, '0'), '')
   AND s.user_id = e.user_id
LEFT JOIN competition_moves m
    ON m.competition_id = e.competition_id AND m.run = e.run AND m.user_id = e.user_id
WHERE e.competition_id = $1 AND e.user_id = $2
ORDER BY e.run DESC
LIMIT $3
