-- board_entry_counts_statement: per statement, the members an INSERT or DELETE on user_scores
-- added or removed, per board (the trigger a command's upsert of a new entry fires).
--
-- Its source exactly as migration V10 last defined it (migrations/V10__entry_counts_per_statement.sql).
-- Migrations are history: a change needs a new migration AND this file;
-- crates/core/tests/it/functions.rs checks that the migrated database holds this definition.
CREATE FUNCTION board_entry_counts_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign bigint := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
    r record;
BEGIN
    FOR r IN
        SELECT board_id, count(*) AS n FROM changed WHERE NOT hidden
         GROUP BY board_id ORDER BY board_id
    LOOP
        PERFORM board_entry_counts_add(r.board_id, sign * r.n);
    END LOOP;
    RETURN NULL;
END $$;
