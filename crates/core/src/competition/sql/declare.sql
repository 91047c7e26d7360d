-- Declares a competition over a declared board that resets, or changes it (competition/
-- declare.rs), in one statement under the competition's row lock. Refused (a `refusal`, nothing
-- written): once it has entrants, a change of its window, duration, cohorts, rating band or
-- tiers ('started'); a cap below the entrants of a run still open ('below_entrants'); a start
-- that is not ahead ('past_start': scores already taken belong to the period they landed in).
-- A one-off competition's window becomes two resets of its board (actor 'competition'): its
-- run is the period that starts at starts_at (absent: the next whole second) and ends at
-- ends_at; a window changed before its start moves them.
-- $1 competition (board) id, $2 category, $3 starts_at, $4 ends_at (RFC 3339 text, whole
-- seconds, checked by the caller; both NULL: recurring, $3 alone NULL: from the next second),
-- $5 entry required, $6 max size, $7 metadata (JSON text), $8 prizes (JSON text), $9 duration
-- in seconds, $10 cohort size, $11 rating band, $12 tiers (JSON text).
WITH window_ AS (
    SELECT CASE
               WHEN $4::text IS NULL THEN NULL
               WHEN $3::text IS NULL
                   THEN date_trunc('second', clock_timestamp()) + interval '1 second'
               ELSE $3::text::timestamptz
           END AS starts_at,
           $4::text::timestamptz AS ends_at
),
before AS (
    SELECT c.starts_at, c.ends_at, c.duration_s, c.cohort_size, c.rating_band, c.tiers,
           EXISTS (SELECT 1 FROM competition_runs r WHERE r.competition_id = $1) AS entered,
           (SELECT max(r.entrants) FROM competition_runs r
            WHERE r.competition_id = $1 AND r.closed_at IS NULL) AS entrants
    FROM competitions c
    WHERE c.competition_id = $1
    FOR UPDATE
),
verdict AS (
    SELECT CASE
               WHEN b.entered AND (
                   ($3::text IS NOT NULL AND b.starts_at IS DISTINCT FROM w.starts_at)
                   OR b.ends_at IS DISTINCT FROM w.ends_at
                   OR b.duration_s IS DISTINCT FROM $9 OR b.cohort_size IS DISTINCT FROM $10
                   OR b.rating_band IS DISTINCT FROM $11 OR b.tiers <> $12::jsonb)
                   THEN 'started'
               WHEN $6::integer IS NOT NULL AND $6::integer < coalesce(b.entrants, 0)
                   THEN 'below_entrants'
               WHEN w.starts_at IS NOT NULL AND w.starts_at <= clock_timestamp()
                    AND b.starts_at IS DISTINCT FROM w.starts_at
                   THEN 'past_start'
           END AS refusal,
           coalesce(b.entrants, 0) AS entrants,
           -- A window given without its start keeps the start it has.
           CASE WHEN $3::text IS NULL AND b.starts_at IS NOT NULL AND w.ends_at IS NOT NULL
                THEN b.starts_at ELSE w.starts_at END AS starts_at,
           w.ends_at
    FROM window_ w LEFT JOIN before b ON true
),
upserted AS (
    INSERT INTO competitions AS c
        (competition_id, category, starts_at, ends_at, entry_required, max_size, metadata,
         prizes, duration_s, cohort_size, rating_band, tiers)
    SELECT $1, $2, v.starts_at, v.ends_at, $5, $6, $7::jsonb, $8::jsonb, $9, $10, $11,
           $12::jsonb
    FROM verdict v
    WHERE v.refusal IS NULL
    ON CONFLICT (competition_id) DO UPDATE
        SET category = EXCLUDED.category,
            starts_at = EXCLUDED.starts_at,
            ends_at = EXCLUDED.ends_at,
            entry_required = EXCLUDED.entry_required,
            max_size = EXCLUDED.max_size,
            metadata = EXCLUDED.metadata,
            prizes = EXCLUDED.prizes,
            duration_s = EXCLUDED.duration_s,
            cohort_size = EXCLUDED.cohort_size,
            rating_band = EXCLUDED.rating_band,
            tiers = EXCLUDED.tiers,
            updated_at = now()
    RETURNING (xmax = 0) AS created, starts_at, ends_at
),
moved AS (
    -- A window moved before its start: its resets still ahead go.
    DELETE FROM board_resets r
    USING upserted u
    WHERE r.board_id = $1 AND r.actor = 'competition' AND r.starts_at > clock_timestamp()
      AND r.starts_at IS DISTINCT FROM u.starts_at AND r.starts_at IS DISTINCT FROM u.ends_at
),
resets AS (
    INSERT INTO board_resets (board_id, starts_at, actor)
    SELECT $1, t, 'competition'
    FROM upserted u, unnest(ARRAY[u.starts_at, u.ends_at]) t
    WHERE t IS NOT NULL
    ON CONFLICT (board_id, starts_at) DO NOTHING
)
SELECT (SELECT refusal FROM verdict) AS refusal, (SELECT entrants FROM verdict) AS entrants,
       (SELECT created FROM upserted) AS created
