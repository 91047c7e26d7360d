-- Grouped commits (the api's board/group.rs): many score commands in one transaction. The
-- entry counts of V5 / V6 then became the lock that held groups up. Their triggers ran inside
-- each command's statement and locked the count row of the user's shard (hashtext(user_id) &
-- 15) until the transaction ended: one group's new members locked shards in an order unrelated
-- to the order of their rows, and two groups each holding a shard the other wanted waited for
-- PostgreSQL's deadlock detector (a second each), then one failed. pgbench, groups of 8 new
-- members per transaction at 64 clients: 170 transactions/s, against 480 with the members
-- existing.
--
-- Now the count moves at commit, and each session counts into a shard of its own:
--   * the triggers are constraint triggers, DEFERRABLE INITIALLY DEFERRED: they fire when the
--     transaction commits, after every row lock of it is held, so a transaction never waits
--     for a row while holding a count row;
--   * the shard is the session's (pg_backend_pid() & 15), not the user's: a transaction takes
--     one count row per board, and two sessions share one only when their process ids agree
--     in the low four bits. A count row may then go below zero (a row counted in one session's
--     shard, uncounted in another's); only the sum over a board's shards means anything, and
--     that is what every read takes.
-- A single command (its own transaction) commits as its statement ends: its count moves in the
-- same transaction, as before. The previous release's statements run unchanged against this
-- schema (expand only): they never name the triggers.

CREATE OR REPLACE FUNCTION board_entry_counts_bump() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change bigint := 0;
    board text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.hidden THEN RETURN NULL; END IF;
        change := 1;
        board := NEW.board_id;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.hidden = NEW.hidden THEN RETURN NULL; END IF;
        change := CASE WHEN NEW.hidden THEN -1 ELSE 1 END;
        board := NEW.board_id;
    ELSE
        IF OLD.hidden THEN RETURN NULL; END IF;
        change := -1;
        board := OLD.board_id;
    END IF;
    INSERT INTO board_entry_counts AS c (board_id, shard, entries)
    VALUES (board, pg_backend_pid() & 15, change)
    ON CONFLICT (board_id, shard) DO UPDATE SET entries = c.entries + change;
    RETURN NULL;
END $$;

DROP TRIGGER user_scores_entry_count_insert ON user_scores;
DROP TRIGGER user_scores_entry_count_delete ON user_scores;
DROP TRIGGER user_scores_entry_count_update ON user_scores;

CREATE CONSTRAINT TRIGGER user_scores_entry_count_insert AFTER INSERT ON user_scores
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION board_entry_counts_bump();
CREATE CONSTRAINT TRIGGER user_scores_entry_count_delete AFTER DELETE ON user_scores
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION board_entry_counts_bump();
CREATE CONSTRAINT TRIGGER user_scores_entry_count_update AFTER UPDATE OF hidden ON user_scores
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION board_entry_counts_bump();
