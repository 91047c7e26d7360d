-- board_entry_counts_add: adds to one of a board's entry-count rows without waiting for another
-- transaction. The two trigger functions beside it call it; every command's upsert fires them
-- (board/sql/command/<operator>.sql).
--
-- Its source exactly as migration V10 last defined it (migrations/V10__entry_counts_per_statement.sql).
-- Migrations are history: a change needs a new migration AND this file;
-- crates/core/tests/it/functions.rs checks that the migrated database holds this definition.
CREATE FUNCTION board_entry_counts_add(board text, change bigint) RETURNS void
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    taken integer;
BEGIN
    IF change = 0 THEN
        RETURN;
    END IF;
    SELECT shard INTO taken
      FROM board_entry_counts
     WHERE board_id = board
       FOR UPDATE SKIP LOCKED
     LIMIT 1;
    IF FOUND THEN
        UPDATE board_entry_counts SET entries = entries + change
         WHERE board_id = board AND shard = taken;
        RETURN;
    END IF;
    -- Every row held by someone else (or none yet): a new row of this session's own. Only
    -- this session and dead ones with the same process id ever create these numbers, so the
    -- first absent one (usually the first tried) cannot appear meanwhile, and a plain insert
    -- of it never waits (an insert meeting a row that another transaction is updating would
    -- wait for it). The lookups stop at that one: a new board costs one, not 512.
    FOR k IN 0..511 LOOP
        PERFORM FROM board_entry_counts
          WHERE board_id = board AND shard = pg_backend_pid() + k * 4194304;
        IF NOT FOUND THEN
            INSERT INTO board_entry_counts (board_id, shard, entries)
            VALUES (board, pg_backend_pid() + k * 4194304, change);
            RETURN;
        END IF;
    END LOOP;
    RAISE EXCEPTION 'no free entry-count row for board %', board;
END $$;
