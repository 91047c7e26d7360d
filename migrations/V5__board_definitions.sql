-- ledgerboard schema, version 5: boards as definitions (issue 21).
--
-- A board is declared in board_definitions: how a submission changes a member's score
-- (operator), which end of the board wins (sort), how equal scores are ordered (tie_break),
-- and the bounds of what may be submitted. A board without a row keeps the behaviour every
-- board had before: add, descending, ties by user id, deltas within ±1000.
--
-- Schema N and N+1 run side by side during a rolling upgrade: every column added here has a
-- default, so version 4's statements keep working (they write an add board's delta and no
-- tie, which is what an undeclared board is).

CREATE TABLE board_definitions (
    board_id     text        COLLATE "C" PRIMARY KEY
        CONSTRAINT board_definitions_board_id_format CHECK (board_id ~ '^[A-Za-z0-9_.-]{1,64}$'),
    display_name text        NOT NULL DEFAULT ''
        CONSTRAINT board_definitions_display_name_length CHECK (char_length(display_name) <= 128),
    operator     text        NOT NULL
        CONSTRAINT board_definitions_operator CHECK (operator IN ('add', 'best', 'latest')),
    sort         text        NOT NULL
        CONSTRAINT board_definitions_sort CHECK (sort IN ('descending', 'ascending')),
    tie_break    text        NOT NULL
        CONSTRAINT board_definitions_tie_break CHECK (tie_break IN ('user_id', 'earliest')),
    -- Bounds of the score a member may hold (and, for best and latest, submit): inside
    -- ±(2^53 - 1), where a Redis double is still exact.
    min_score    bigint      NOT NULL,
    max_score    bigint      NOT NULL,
    -- Bounds of one add command's delta; NULL on best and latest boards.
    min_delta    bigint,
    max_delta    bigint,
    -- Bumped by every change: a command carries the revision it was validated against and
    -- its statement refuses to run under another (the api's cache of definitions may lag).
    revision     bigint      NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT board_definitions_score_bounds CHECK (
        min_score >= -9007199254740991 AND max_score <= 9007199254740991 AND min_score <= max_score),
    CONSTRAINT board_definitions_delta_bounds CHECK (
        (operator = 'add') = (min_delta IS NOT NULL AND max_delta IS NOT NULL)
        AND (min_delta IS NULL OR (min_delta <= max_delta
             AND min_delta >= -9007199254740991 AND max_delta <= 9007199254740991)))
);

-- The order of equal scores on an `earliest` board: each time a member's score changes, the
-- statement draws the next value of this sequence (the database decides, never a client's
-- clock) and stores it, signed so that the member who reached the score first sorts first:
-- -n on a descending board, n on an ascending one. Zero means "no tie key" (ties by user id),
-- so a row of any board says by itself how Redis spells its member (projection/order.rs).
CREATE SEQUENCE user_scores_reached_seq AS bigint MINVALUE 1 START 1;
ALTER TABLE user_scores ADD COLUMN tie bigint NOT NULL DEFAULT 0;
ALTER TABLE leaderboard_outbox ADD COLUMN tie bigint NOT NULL DEFAULT 0;

-- The one order of a board, on both paths: descending boards read this index forward
-- (score desc, tie desc, user id desc: Redis's ZRANGE … REV of the encoded members), ascending
-- boards backward (ZRANGE). It replaces version 1's user_scores_rank, whose order it extends.
CREATE INDEX user_scores_order ON user_scores (board_id, score DESC, tie DESC, user_id DESC);
DROP INDEX user_scores_rank;

-- A command's submitted value: the delta of an add board, the score of a best or latest one.
-- `delta` stays for version 4's statements (and its CHECK goes: an add board's delta bounds are
-- now per board). `improved` is false for a best submission that did not beat the standing
-- best: recorded (its event id is used), nothing else written.
ALTER TABLE score_events ALTER COLUMN delta DROP NOT NULL;
ALTER TABLE score_events DROP CONSTRAINT score_events_delta_range;
ALTER TABLE score_events ADD COLUMN submitted bigint;
ALTER TABLE score_events ADD COLUMN operator text;
ALTER TABLE score_events ADD COLUMN improved boolean NOT NULL DEFAULT true;

-- Per-entry metadata: a small JSON object (at most 1024 bytes as the api serializes it) that
-- a game keeps with a member's score (a replay id, a car, a country). The command that sets
-- the score sets it: on a best board only an improving submission, on add and latest boards
-- every command that carries one (a command without one keeps the prior). score_events keeps
-- what the command carried (for the idempotency comparison), the outbox row what the member
-- holds after it (the projection writes absolute state, like the score).
ALTER TABLE user_scores ADD COLUMN metadata jsonb;
ALTER TABLE score_events ADD COLUMN metadata jsonb;
ALTER TABLE leaderboard_outbox ADD COLUMN metadata jsonb;

-- Entries per board, without counting: a read's `total` on the database path is a sum over
-- at most 16 rows, whatever the board's size. Sharded by user so that new members of one
-- board do not queue on one row lock; kept by triggers, so every writer (version 4's
-- statements, tests, moderation) keeps it true.
CREATE TABLE board_entry_counts (
    board_id text     COLLATE "C" NOT NULL,
    shard    smallint NOT NULL,
    entries  bigint   NOT NULL,
    PRIMARY KEY (board_id, shard)
);

CREATE FUNCTION board_entry_counts_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO board_entry_counts AS c (board_id, shard, entries)
        VALUES (NEW.board_id, hashtext(NEW.user_id) & 15, 1)
        ON CONFLICT (board_id, shard) DO UPDATE SET entries = c.entries + 1;
        RETURN NEW;
    ELSE
        UPDATE board_entry_counts SET entries = entries - 1
        WHERE board_id = OLD.board_id AND shard = hashtext(OLD.user_id) & 15;
        RETURN OLD;
    END IF;
END $$;

CREATE TRIGGER user_scores_entry_count_insert AFTER INSERT ON user_scores
    FOR EACH ROW EXECUTE FUNCTION board_entry_counts_bump();
CREATE TRIGGER user_scores_entry_count_delete AFTER DELETE ON user_scores
    FOR EACH ROW EXECUTE FUNCTION board_entry_counts_bump();

-- Existing boards: counted once, here.
INSERT INTO board_entry_counts (board_id, shard, entries)
SELECT board_id, hashtext(user_id) & 15, count(*)
FROM user_scores
GROUP BY 1, 2;
