-- Declares a competition over a declared board, or changes it (competition/mod.rs). The cap may
-- not go below the entrants it has: then no row comes back and the caller says so.
-- $1 competition (board) id, $2 category, $3 starts_at, $4 ends_at (RFC 3339 text, checked by
-- the caller), $5 entry required, $6 max size or NULL, $7 metadata (JSON text or NULL), $8 prizes
-- (JSON text).
INSERT INTO competitions AS c
    (competition_id, category, starts_at, ends_at, entry_required, max_size, metadata, prizes)
VALUES ($1, $2, $3::text::timestamptz, $4::text::timestamptz, $5, $6, $7::jsonb, $8::jsonb)
ON CONFLICT (competition_id) DO UPDATE
    SET category = EXCLUDED.category,
        starts_at = EXCLUDED.starts_at,
        ends_at = EXCLUDED.ends_at,
        entry_required = EXCLUDED.entry_required,
        max_size = EXCLUDED.max_size,
        metadata = EXCLUDED.metadata,
        prizes = EXCLUDED.prizes,
        updated_at = now()
    WHERE EXCLUDED.max_size IS NULL OR EXCLUDED.max_size >= c.entrants
RETURNING competition_id, (xmax = 0) AS created
