-- A player's entry (competition/mod.rs), once per player, decided in one statement: the update of
-- the competition's row takes its row lock, so concurrent entries count one after the other and
-- the cap is never passed (never read-then-write). A repeat answers the first entry.
-- Concurrent arrivals of one new player: the later insert raises unique_violation on
-- competition_entries_pkey, which aborts its statement (its count too); the caller runs it
-- again and finds the first as a repeat.
-- $1 competition id, $2 user id.
WITH prior AS (
    SELECT seat, entered_at FROM competition_entries WHERE competition_id = $1 AND user_id = $2
),
c AS (
    SELECT starts_at, ends_at, max_size, entrants FROM competitions WHERE competition_id = $1
),
seat AS (
    UPDATE competitions
    SET entrants = entrants + 1
    WHERE competition_id = $1 AND NOT EXISTS (SELECT 1 FROM prior)
      AND clock_timestamp() >= starts_at AND clock_timestamp() < ends_at
      AND (max_size IS NULL OR entrants < max_size)
    RETURNING entrants
),
entry AS (
    INSERT INTO competition_entries (competition_id, user_id, seat)
    SELECT $1, $2, entrants FROM seat
    RETURNING seat, entered_at
),
answer AS (
    SELECT 'entered' AS outcome, seat, entered_at FROM entry
    UNION ALL
    SELECT 'repeat', seat, entered_at FROM prior
    UNION ALL
    SELECT CASE
               WHEN NOT EXISTS (SELECT 1 FROM c) THEN 'unknown'
               WHEN clock_timestamp() < (SELECT starts_at FROM c) THEN 'not_started'
               WHEN clock_timestamp() >= (SELECT ends_at FROM c) THEN 'ended'
               ELSE 'full'
           END, NULL, NULL
    WHERE NOT EXISTS (SELECT 1 FROM prior) AND NOT EXISTS (SELECT 1 FROM seat)
)
SELECT outcome, seat,
       to_char(entered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS entered_at
FROM answer
