-- board_entry_counts_bump: per row, ±1 on the row's board when an entry is hidden or shown (the
-- trigger an update of user_scores.hidden fires).
--
-- Its source exactly as migration V10 last defined it (migrations/V10__entry_counts_per_statement.sql;
-- first defined by V9). Migrations are history: a change needs a new migration AND this file;
-- crates/core/tests/it/functions.rs checks that the migrated database holds this definition.
CREATE OR REPLACE FUNCTION board_entry_counts_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.hidden <> NEW.hidden THEN
        PERFORM board_entry_counts_add(NEW.board_id, CASE WHEN NEW.hidden THEN -1 ELSE 1 END);
    END IF;
    RETURN NULL;
END $$;
