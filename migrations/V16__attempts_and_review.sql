-- ledgerboard schema, version 16: attempts and the review of suspicious scores (issue 38).
--
-- Rolling upgrade: two nullable columns and new tables, nothing rewritten. Version 15's api
-- neither reads nor writes them: there a board's attempts and review rules are not enforced
-- (every command is applied as on a board without them), which is why an operator upgrades
-- every api before declaring either. Rolling back needs nothing undone.

-- What a board asks of players' scores, as JSON (board/definition/rules.rs): NULL when off.
--   attempts: {"min_duration_ms": n, "max_per_period": n|null, "ttl_s": n}: a player token's
--     score must carry an attempt started on this board (service tokens may carry one);
--   review: {"ceiling": [n|null, ...], "max_jump": n|null, "max_per_minute": n|null}: a
--     score past one of them is held for review instead of applied.
ALTER TABLE board_definitions
    ADD COLUMN attempts jsonb,
    ADD COLUMN review jsonb;

-- One attempt: a run of the game the server saw start, used by at most one score command.
-- Started by the player (POST /v1/boards/{board}/attempts), idempotent by the player's request
-- key; bound to the player, the board as sent and the period open when it started (a score
-- lands in the period open when its statement runs: another one means the attempt's period is
-- over). Read and used by primary key only.
CREATE TABLE attempts (
    attempt_id      uuid        PRIMARY KEY,
    board_id        text        COLLATE "C" NOT NULL,
    period_board    text        COLLATE "C" NOT NULL,
    user_id         text        COLLATE "C" NOT NULL,
    request_key     text        COLLATE "C" NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    -- Copied from the definition at the start, so a later change does not move a started
    -- attempt's bar.
    min_duration_ms integer     NOT NULL,
    -- The event id of the score command that used it (a repeat of that command may carry it
    -- again), and when.
    used_by         uuid,
    used_at         timestamptz,
    CONSTRAINT attempts_request UNIQUE (board_id, user_id, request_key)
);
-- The sweep of old attempts (reconciler) goes by expiry.
CREATE INDEX attempts_expiry ON attempts (expires_at);

-- How many attempts a player started in a period: the cap is decided by one upsert on this row
-- (board/sql/attempt_start.sql), never by counting attempts.
CREATE TABLE attempt_counts (
    period_board text    COLLATE "C" NOT NULL,
    user_id      text    COLLATE "C" NOT NULL,
    started      integer NOT NULL,
    PRIMARY KEY (period_board, user_id)
);

-- A player's score commands on a board in the current minute (the review's max_per_minute):
-- one row per player and board, its minute and count replaced as minutes pass.
CREATE TABLE submission_minutes (
    board_id text        COLLATE "C" NOT NULL,
    user_id  text        COLLATE "C" NOT NULL,
    minute   timestamptz NOT NULL,
    n        integer     NOT NULL,
    PRIMARY KEY (board_id, user_id)
);

-- A score held for review: recorded, never applied while it waits, so no read path, projection
-- or rebuild can show it. Approval applies it as the command it was (its event id, its fields,
-- through the ordinary statement); rejection keeps it here, hidden, with the reason. The row is
-- the decision's audit: who, when, why.
CREATE TABLE held_scores (
    event_id     uuid        PRIMARY KEY,
    board_id     text        COLLATE "C" NOT NULL,
    -- The board it would have written: the period open when it was held.
    period_board text        COLLATE "C" NOT NULL,
    user_id      text        COLLATE "C" NOT NULL,
    -- The command's fields as sent ({"score"|"delta", "metadata"}), to apply on approval and
    -- to tell a repeat from another command reusing the event id.
    fields       jsonb       NOT NULL,
    attempt_id   uuid,
    -- Which rule fired (ceiling, jump, rate) and how.
    rule         text        NOT NULL
        CONSTRAINT held_scores_rule CHECK (rule IN ('ceiling', 'jump', 'rate')),
    detail       text        NOT NULL,
    -- What the sender was told (it looks accepted); a repeat is told it again.
    answer       jsonb       NOT NULL,
    state        text        NOT NULL DEFAULT 'pending'
        CONSTRAINT held_scores_state CHECK (state IN ('pending', 'approved', 'rejected')),
    held_at      timestamptz NOT NULL DEFAULT now(),
    decided_at   timestamptz,
    decided_by   text,
    reason       text
        CONSTRAINT held_scores_reason_length CHECK (char_length(reason) BETWEEN 1 AND 512)
);
-- The queue, oldest first (partial: decided rows cost it nothing), and a period's held scores
-- by state (period verify counts them).
CREATE INDEX held_scores_queue ON held_scores (held_at, event_id) WHERE state = 'pending';
CREATE INDEX held_scores_period ON held_scores (period_board, state);
