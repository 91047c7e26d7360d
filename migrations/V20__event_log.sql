-- Events out (issue 40): one event log in PostgreSQL, written in the same transaction as what
-- it reports, read by the feed (`GET /v1/events`), the webhook dispatcher and the tests.
--
-- Two tables, because an order that readers can page by must only ever grow at the end:
--
-- * `event_queue`: what a transaction writes, beside the change it reports (the score
--   command's statement, a period's or a run's close, a moderation or review decision).
--   `seq` is drawn at insert, so rows commit out of `seq` order: a reader paging by `seq`
--   would step past a row that commits later with a smaller one.
-- * `events`: the log. The sequencer (core `events/sequence.rs`) moves the committed queue
--   rows here in `seq` order, each with the next `position`, one sequencer at a time (an
--   advisory lock), so positions only ever commit in increasing order: a reader that has seen
--   position P will never see a new row at or below P. Events of one member of a board keep
--   the order of their versions: a command waits for the row lock of the member's previous
--   one, so its queue row is inserted after that one committed.
--
-- Score events carry their tuples typed (the order-key form of user_scores: rendered with the
-- board's columns by the reader, core `events/render.rs`); other kinds carry `payload`. Both
-- tables are insert and delete only (no update): the queue is emptied as it is sequenced,
-- the log by retention (`events.retention_hours`).

CREATE TABLE event_queue (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Stable and unique: a score's event is its command's event id; other kinds derive theirs
    -- (uuid v5) from what they report, so that writing one twice is one event.
    event_id     uuid NOT NULL,
    kind         text NOT NULL,
    -- The declared board (never a period's or a cohort's board id): subscriptions, the feed's
    -- filter and the per-board order go by it.
    board_id     text NOT NULL,
    -- The board the change was written to, when it is a period or a cohort of `board_id`.
    target       text,
    user_id      text,
    occurred_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The W3C trace context of the request that wrote it (the command's span).
    traceparent  text,
    score        bigint,
    col2         bigint,
    col3         bigint,
    version      bigint,
    improved     boolean,
    prev_score   bigint,
    prev_col2    bigint,
    prev_col3    bigint,
    prev_version bigint,
    payload      jsonb
);

CREATE SEQUENCE event_positions AS bigint;

CREATE TABLE events (
    position     bigint PRIMARY KEY,
    event_id     uuid NOT NULL,
    kind         text NOT NULL,
    board_id     text NOT NULL,
    target       text,
    user_id      text,
    occurred_at  timestamptz NOT NULL,
    traceparent  text,
    score        bigint,
    col2         bigint,
    col3         bigint,
    version      bigint,
    improved     boolean,
    prev_score   bigint,
    prev_col2    bigint,
    prev_col3    bigint,
    prev_version bigint,
    payload      jsonb
);

-- The score statement's snapshot read of the member's previous tuple (`before`) is only the
-- previous version when no other command for the member committed between the statement's
-- snapshot and its row lock. When one did, the statement raises a serialization failure
-- (40001) and the caller runs it again, as after any lost race (db/errors.rs: Transient).
CREATE FUNCTION lb_event_race() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the member changed during the command; run it again'
        USING ERRCODE = '40001';
END
$$;

-- Webhook subscriptions (the dispatcher, crates/dispatcher): what a receiver asked for and
-- where its deliveries stand.
CREATE TABLE webhook_subscriptions (
    subscription_id      text PRIMARY KEY,
    url                  text NOT NULL,
    -- Empty: every kind; every board.
    kinds                text[] NOT NULL DEFAULT '{}',
    boards               text[] NOT NULL DEFAULT '{}',
    -- The HMAC key of the signatures; the receiver holds the same.
    secret               text NOT NULL,
    -- Per-subscription concurrency: each board goes by one lane (its hash), so a board's
    -- events are delivered in order while other boards' go in parallel. Fixed at creation.
    lanes                integer NOT NULL CHECK (lanes BETWEEN 1 AND 64),
    enabled              boolean NOT NULL DEFAULT true,
    -- Consecutive failed deliveries; past the threshold the circuit opens until the instant.
    failures             integer NOT NULL DEFAULT 0,
    circuit_open_until   timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_lanes (
    subscription_id  text NOT NULL REFERENCES webhook_subscriptions ON DELETE CASCADE,
    lane             integer NOT NULL,
    -- Every event of this lane at or below this position was delivered or parked.
    position         bigint NOT NULL,
    -- Failed attempts at the lane's next event, and when it is tried again.
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_error       text,
    -- The dispatcher replica delivering it, until when (a lease: no transaction stays open
    -- across a delivery).
    lease_holder     text,
    lease_until      timestamptz,
    PRIMARY KEY (subscription_id, lane)
);

CREATE TABLE webhook_parked (
    subscription_id  text NOT NULL REFERENCES webhook_subscriptions ON DELETE CASCADE,
    position         bigint NOT NULL,
    event_id         uuid NOT NULL,
    attempts         integer NOT NULL,
    last_error       text,
    parked_at        timestamptz NOT NULL DEFAULT now(),
    -- Set by a requeue: the dispatcher delivers it again, once, then removes or re-parks it.
    requeued_at      timestamptz,
    PRIMARY KEY (subscription_id, position)
);
CREATE INDEX webhook_parked_requeued ON webhook_parked (requeued_at)
    WHERE requeued_at IS NOT NULL;

-- The greatest position retention deleted: a feed cursor below it has lost events (410).
CREATE TABLE event_retention (
    one            boolean PRIMARY KEY DEFAULT true CHECK (one),
    swept_through  bigint NOT NULL DEFAULT 0
);
INSERT INTO event_retention DEFAULT VALUES;
