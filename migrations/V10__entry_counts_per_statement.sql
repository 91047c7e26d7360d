-- Entry counts that cost one update per board and statement, and never wait.
--
-- V5's triggers (and V9's, deferred to the commit) moved a count row once per inserted,
-- deleted or hidden row. Rows updated again and again in one transaction cannot be pruned
-- until it ends, and each update first walks the versions before it, so one statement of
-- N new members cost O(N²): 50,000 rows in one INSERT took 12 s with V5's triggers (16 count
-- rows per board), 28 s with V9's (one: the session's), 100,000 rows 62 s and 145 s. A bulk
-- load, an erasure sweep or a board's deletion grew with the square of its size; a
-- 10,000,000-user board could not be loaded at all.
--
-- Now:
--   * inserts and deletes are counted once per statement, from its transition table, one
--     update per board the statement touched (statement-level triggers; transition tables are
--     not allowed with a column list, so hiding, an UPDATE OF hidden, stays a row trigger: it
--     touches one row per board of one user);
--   * the count row a statement moves is any of the board's rows that no other transaction
--     holds (FOR UPDATE SKIP LOCKED), or else a new one numbered by this session's process id
--     (unique among live sessions, so no other session can be creating it). Counting therefore
--     never waits for another transaction: no deadlock between groups of commands (what V9's
--     deferral was for), and no constraint triggers are needed. A board has about as many
--     count rows as sessions ever wrote it at the same moment; only their sum means anything,
--     and that is what every read takes.
--   * shard becomes an integer, to hold process ids (pid_max is at most 2^22 on Linux;
--     pid + k * 2^22 for k < 512 stays within integer). The table is one row per board and
--     writer: the rewrite is short, under an exclusive lock on this table only.
-- Expand only: the previous release's statements never name these triggers or functions, and
-- its V9 function would write shards 0..15 into the wider column unchanged.

ALTER TABLE board_entry_counts ALTER COLUMN shard TYPE integer;

-- Adds `change` to one of `board`'s count rows without waiting for any other transaction.
-- Its lookups must go through the primary key whatever the statistics say: on a new or freshly
-- emptied table the planner would scan it, and one statement adding a million boards made
-- each lookup scan every row added before it (quadratic again); hence enable_seqscan off for
-- the function's own statements.
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

-- Per statement: the members the statement added (INSERT) or removed (DELETE), per board,
-- visible ones only. Boards in byte order, so one statement's count rows are taken in one
-- order (they are never waited for; the order only keeps the plan stable).
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

-- Per row, for hiding and showing: ±1 on the row's board.
CREATE OR REPLACE FUNCTION board_entry_counts_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.hidden <> NEW.hidden THEN
        PERFORM board_entry_counts_add(NEW.board_id, CASE WHEN NEW.hidden THEN -1 ELSE 1 END);
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER user_scores_entry_count_insert ON user_scores;
DROP TRIGGER user_scores_entry_count_delete ON user_scores;
DROP TRIGGER user_scores_entry_count_update ON user_scores;

CREATE TRIGGER user_scores_entry_count_insert AFTER INSERT ON user_scores
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION board_entry_counts_statement();
CREATE TRIGGER user_scores_entry_count_delete AFTER DELETE ON user_scores
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION board_entry_counts_statement();
CREATE TRIGGER user_scores_entry_count_update AFTER UPDATE OF hidden ON user_scores
    FOR EACH ROW EXECUTE FUNCTION board_entry_counts_bump();
