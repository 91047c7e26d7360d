-- A player's entry into the run open now (competition/enter.rs): lb_competition_enter decides
-- it in one call (migration V18, sql/functions/), the times as RFC 3339 text, with the league's
-- tiers (their names name the entry's tier), so an entry is one round trip.
-- $1 competition id, $2 user id, $3 rating (NULL: none).
SELECT f.outcome, f.run, f.seat, f.tier, f.cohort, f.new_cohort,
       to_char(f.entered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS entered_at,
       (SELECT c.tiers::text FROM competitions c WHERE c.competition_id = $1) AS tiers
FROM lb_competition_enter($1, $2, $3) f
