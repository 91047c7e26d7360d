-- ledgerboard schema, version 9: archived periods (issue 22).
--
-- A closed period stays readable for ever from PostgreSQL (its source rows and its frozen
-- standings are kept); its Redis projection is kept only for the reconciler's retention
-- (`reconciler.period_projection_retention_ms` after the close). Then the reconciler archives
-- it in two steps, each recorded here:
--   1. archived_at: from then on the api reads the period from PostgreSQL (it learns of it
--      within its period cache's time: period_current.sql answers the last archived period),
--      the reconciler's passes skip it and its rebuild requests are dropped;
--   2. keys_dropped_at: once archived_at is older than `reconciler.period_archive_grace_ms`
--      (longer than any api's cache), its Redis keys are unlinked.
-- So no reader is ever sent to keys that are gone, and nothing rebuilds them.
ALTER TABLE period_closes
    ADD COLUMN archived_at     timestamptz,
    ADD COLUMN keys_dropped_at timestamptz;

-- Whether a stored board id is an archived period (false for a board that is not a period).
CREATE FUNCTION lb_period_archived(p_board text) RETURNS boolean
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT position('~' IN p_board) > 0 AND EXISTS (
        SELECT 1 FROM period_closes c
        WHERE c.board_id = split_part(p_board, '~', 1)
          AND c.period = split_part(p_board, '~', 2)
          AND c.archived_at IS NOT NULL)
$$;
