-- ledgerboard schema, version 6: moderation (issue 22, part 3).
--
-- Three admin commands, each idempotent by a client-supplied id and audited: remove a user's
-- entry from a board, ban (and unban) a user, erase a user. They change user_scores in the
-- same transaction as the outbox rows that carry the change to Redis, like a score command;
-- the outbox row holds the member's absolute state with a version, so a score projected late
-- can never bring back a member that a newer version hid.
--
-- Schema N and N+1 run side by side during a rolling upgrade: every column added here has a
-- default (version 5's statements write visible rows, which is what a user without a ban is).

-- One row per moderation command (the audit record: who = the token's name, when = the
-- database clock, why = the reason). `digest` is SHA-256 over the command's payload (action,
-- board, user, reason: moderation.rs) so that a reuse of the id with another payload is refused
-- (409) and a repeat answers with what the first run did (`result`). An erasure's row holds
-- the pseudonym the user's events now carry, never the erased id.
CREATE TABLE moderation_actions (
    action_id uuid        PRIMARY KEY,
    action    text        NOT NULL
        CONSTRAINT moderation_actions_action CHECK (action IN ('remove', 'ban', 'unban', 'erase')),
    board_id  text        COLLATE "C",
    user_id   text        COLLATE "C" NOT NULL,
    reason    text        NOT NULL
        CONSTRAINT moderation_actions_reason_length CHECK (char_length(reason) BETWEEN 1 AND 512),
    actor     text        NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    digest    bytea       NOT NULL,
    result    jsonb       NOT NULL DEFAULT '{}'
);

-- Users hidden from every read of every board. A score command for a banned user is still
-- applied and recorded; its entry is written hidden (user_scores.hidden) and stays so until
-- the unban.
CREATE TABLE banned_users (
    user_id   text        COLLATE "C" PRIMARY KEY,
    action_id uuid        NOT NULL REFERENCES moderation_actions (action_id),
    banned_at timestamptz NOT NULL DEFAULT now()
);

-- A hidden entry (its user is banned) keeps its score, version, tie and metadata, so an unban
-- restores it as it was; every read leaves it out and ranks as though it did not exist.
ALTER TABLE user_scores ADD COLUMN hidden boolean NOT NULL DEFAULT false;

-- The version a removed entry had reached (one more than its last score's): a new entry of the
-- same user on the same board continues from it (board/sql/*.sql), so its first score outranks
-- the tombstone the projection keeps for the removal.
CREATE TABLE removed_entries (
    board_id text   COLLATE "C" NOT NULL,
    user_id  text   COLLATE "C" NOT NULL,
    version  bigint NOT NULL,
    PRIMARY KEY (board_id, user_id)
);

-- What an outbox row asks of the projection: NULL places the member at its absolute state (a
-- score command, an unban), 'hide' takes it out and keeps a tombstone with the version
-- (a removal, a ban, a banned user's score), 'erase' takes out every trace of the user,
-- tombstone included. A moderation row has no score event: its event_id is a fresh UUID
-- (the projection's event marker is keyed by it), so the foreign key to score_events goes.
-- An 'erase' row's user_id is overwritten when it is published (outbox/publish.sql).
ALTER TABLE leaderboard_outbox ADD COLUMN moderation text
    CONSTRAINT leaderboard_outbox_moderation CHECK (moderation IN ('hide', 'erase'));
ALTER TABLE leaderboard_outbox DROP CONSTRAINT leaderboard_outbox_event_id_fkey;

-- The board's order over visible entries only: every read states NOT hidden, which this
-- partial index implies, so its counts stay index-only. It takes over from version 5's
-- user_scores_order (same columns), which stays for this release: version 5's reads, still
-- running during a rolling upgrade, state no NOT hidden and need it. The next release drops
-- it (expand, then contract: docs/operations.md).
CREATE INDEX user_scores_visible_order ON user_scores (board_id, score DESC, tie DESC, user_id DESC)
    WHERE NOT hidden;

-- A ban or an unban finds a user's entries on every board.
CREATE INDEX user_scores_user ON user_scores (user_id);

-- board_entry_counts (V5) counts visible entries only: a read's `total` leaves banned users
-- out. A hidden row counts nothing; hiding or showing a row moves the count.
CREATE OR REPLACE FUNCTION board_entry_counts_bump() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change bigint := 0;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.hidden THEN RETURN NEW; END IF;
        INSERT INTO board_entry_counts AS c (board_id, shard, entries)
        VALUES (NEW.board_id, hashtext(NEW.user_id) & 15, 1)
        ON CONFLICT (board_id, shard) DO UPDATE SET entries = c.entries + 1;
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.hidden = NEW.hidden THEN RETURN NEW; END IF;
        change := CASE WHEN NEW.hidden THEN -1 ELSE 1 END;
        INSERT INTO board_entry_counts AS c (board_id, shard, entries)
        VALUES (NEW.board_id, hashtext(NEW.user_id) & 15, change)
        ON CONFLICT (board_id, shard) DO UPDATE SET entries = c.entries + change;
        RETURN NEW;
    ELSE
        IF OLD.hidden THEN RETURN OLD; END IF;
        UPDATE board_entry_counts SET entries = entries - 1
        WHERE board_id = OLD.board_id AND shard = hashtext(OLD.user_id) & 15;
        RETURN OLD;
    END IF;
END $$;

CREATE TRIGGER user_scores_entry_count_update AFTER UPDATE OF hidden ON user_scores
    FOR EACH ROW EXECUTE FUNCTION board_entry_counts_bump();
