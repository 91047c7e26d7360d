-- ledgerboard schema, version 19: `lb_period_archived` knows a competition's cohorts.
--
-- A cohort is a board of its own, `<board>~<period>~<cohort>` (V18), and its close row is keyed
-- by the period key `<period>~<cohort>`. V8's lookup took the part between the first and the
-- second `~` as the period, so it asked about `<period>`, which a run with cohorts never closes:
-- an archived cohort read as not archived, and the reconciler's walk (db/sql/reconcile/
-- boards.sql) and moderation's re-versioning (board/sql/moderation_*.sql) would have written
-- its dropped keys back. Now everything after the first `~` is the period key.
--
-- Rolling upgrade: one function replaced, with the same signature; every version's callers
-- read it the same way. Rolling back: V8's definition (it is only wrong for cohorts).
CREATE OR REPLACE FUNCTION lb_period_archived(p_board text) RETURNS boolean
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT position('~' IN p_board) > 0 AND EXISTS (
        SELECT 1 FROM period_closes c
        WHERE c.board_id = split_part(p_board, '~', 1)
          AND c.period = substr(p_board, position('~' IN p_board) + 1)
          AND c.archived_at IS NOT NULL)
$$;
