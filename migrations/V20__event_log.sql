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

-- Webhook subscriptions (core `webhook/`; delivered by the dispatcher, crates/dispatcher):
-- what a receiver asked for, and where its deliveries stand. docs/dispatcher.md describes the
-- delivery; the SQL that reads and writes these tables is under core `webhook/sql/`.
CREATE TABLE webhook_subscriptions (
    subscription_id      text PRIMARY KEY,
    url                  text NOT NULL,
    -- Empty: every kind; every board.
    kinds                text[] NOT NULL DEFAULT '{}',
    boards               text[] NOT NULL DEFAULT '{}',
    -- The HMAC key of the signatures; the receiver holds the same. Stored as given (a
    -- signature needs the key itself, not a digest); shown once, at creation.
    secret               text NOT NULL,
    -- Per-subscription concurrency: each board goes by one lane (lb_webhook_lane), so a
    -- board's events are delivered in order while other boards' go in parallel. Fixed at
    -- creation: changing it would move boards between lanes with events in flight.
    lanes                integer NOT NULL CHECK (lanes BETWEEN 1 AND 64),
    enabled              boolean NOT NULL DEFAULT true,
    -- The log's last position at creation: the subscription receives the events after it.
    start_position       bigint NOT NULL,
    -- Consecutive failed deliveries (any lane); from the dispatcher's threshold on, the circuit
    -- is open until `circuit_open_until`, then one trial delivery decides (success closes it,
    -- failure opens it again). Written only when it changes, so that lanes that succeed do
    -- not queue on this row's lock.
    failures             integer NOT NULL DEFAULT 0,
    circuit_open_until   timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- The lane of a board: one function, so that every statement (and a receiver's operator
-- reading docs/dispatcher.md) agrees. bigint before abs(): abs(-2^31) overflows an integer.
CREATE FUNCTION lb_webhook_lane(board text, lanes integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (abs(hashtext(board)::bigint) % lanes)::integer
$$;

CREATE TABLE webhook_lanes (
    subscription_id  text NOT NULL REFERENCES webhook_subscriptions ON DELETE CASCADE,
    lane             integer NOT NULL,
    -- Every event of this lane at or below this position was delivered, parked or lost to
    -- retention (webhook_gaps). Retention keeps what enabled subscriptions' lanes are still
    -- behind on, up to `events.webhook_hold_hours` (core `events/sql/sweep.sql`).
    position         bigint NOT NULL,
    -- Failed attempts at the lane's next event, and when it is tried again.
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_error       text,
    -- The dispatcher claim delivering it, until when: a lease, so no transaction stays open
    -- across an HTTP delivery. The holder is unique per claim; every write of the lane's
    -- progress is fenced by it, so a replica whose lease ran out cannot move the lane.
    lease_holder     text,
    lease_until      timestamptz,
    PRIMARY KEY (subscription_id, lane)
);
CREATE INDEX webhook_lanes_due ON webhook_lanes (next_attempt_at);

-- Events a lane gave up on after `dispatcher.max_attempts`: the lane moved on; the event's body
-- is kept here as it was signed, so that retention of the log cannot lose a parked event.
CREATE TABLE webhook_parked (
    subscription_id  text NOT NULL REFERENCES webhook_subscriptions ON DELETE CASCADE,
    position         bigint NOT NULL,
    event_id         uuid NOT NULL,
    kind             text NOT NULL,
    board_id         text NOT NULL,
    body             text NOT NULL,
    attempts         integer NOT NULL,
    last_error       text,
    parked_at        timestamptz NOT NULL DEFAULT now(),
    -- Set by a requeue: the dispatcher delivers it once more, then deletes it (delivered) or
    -- parks it again (requeued_at cleared, attempts + 1).
    requeued_at      timestamptz,
    -- A requeued row's delivery is leased like a lane.
    lease_holder     text,
    lease_until      timestamptz,
    PRIMARY KEY (subscription_id, position)
);
CREATE INDEX webhook_parked_requeued ON webhook_parked (requeued_at)
    WHERE requeued_at IS NOT NULL;

-- Events a lane never delivered because retention deleted them first (a subscription disabled
-- for longer than the retention, or a lane stuck past `events.webhook_hold_hours`): recorded
-- when the lane finds the log swept beyond its position, so the loss is visible
-- (`lbctl webhook show`, GET /v1/webhooks/{id}, the ledgerboard_webhook_gaps gauge) instead
-- of silent. Some of the positions may have been other lanes' or other kinds': once deleted,
-- nobody can tell.
CREATE TABLE webhook_gaps (
    subscription_id   text NOT NULL REFERENCES webhook_subscriptions ON DELETE CASCADE,
    lane              integer NOT NULL,
    after_position    bigint NOT NULL,
    through_position  bigint NOT NULL,
    recorded_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subscription_id, lane, after_position)
);

-- The greatest position retention deleted: a feed cursor below it has lost events (410).
CREATE TABLE event_retention (
    one            boolean PRIMARY KEY DEFAULT true CHECK (one),
    swept_through  bigint NOT NULL DEFAULT 0
);
INSERT INTO event_retention DEFAULT VALUES;

-- The kinds other than score.accepted are written by the statements of what they report (a
-- period's and a run's close, moderation, review: docs/api.md, "Events"), each with an id
-- derived from what it reports, so that the same report written twice (a retried
-- transaction, a second close) is the same event, never two different ones: a UUID version 3
-- (RFC 9562: MD5 of this namespace and the name, here so that any language can recompute it)
-- of `<kind>:<what>`, such as `period.closed:<board>:<period key>`.
CREATE FUNCTION lb_event_id(name text) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (overlay(overlay(h PLACING '3' FROM 13 FOR 1)
                    PLACING substr('89ab', (('x' || substr(h, 17, 1))::bit(4)::int & 3) + 1, 1)
                    FROM 17 FOR 1))::uuid
    FROM (SELECT md5(decode('a50b50eedb374f2c9dc2bf41e504777e', 'hex')
                     || convert_to(name, 'UTF8')) AS h) d
$$;

-- How many standings a period.closed or competition.closed event carries per board (the rest:
-- GET /v1/boards/{board}/periods/{period}/standings, /v1/competitions/{id}/results).
CREATE FUNCTION lb_event_first() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT 10';

-- A tuple stored in order-key form (model/order.rs: the other columns negated when they order
-- the other way from the first) as the board's values, for an event's standings: NULL on a
-- board of one column (the score says it all), else one value per declared column, as reads
-- show `scores`. $1 the columns as board_definitions and period_closes hold them.
CREATE FUNCTION lb_event_scores(defs jsonb, score bigint, col2 bigint, col3 bigint)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN defs IS NULL OR jsonb_typeof(defs) <> 'array' OR jsonb_array_length(defs) < 2
            THEN NULL
        WHEN jsonb_array_length(defs) = 2 THEN jsonb_build_array(
            score,
            CASE WHEN defs->1->>'order' = defs->0->>'order' THEN col2 ELSE -col2 END)
        ELSE jsonb_build_array(
            score,
            CASE WHEN defs->1->>'order' = defs->0->>'order' THEN col2 ELSE -col2 END,
            CASE WHEN defs->2->>'order' = defs->0->>'order' THEN col3 ELSE -col3 END)
    END
$$;

-- review.approved is written once the approved score is applied (by the command groups, in a
-- transaction of their own: board/guard/review.rs), not with the decision, which an approval
-- whose score is refused undoes. Set in the statement that writes the event, so that approving
-- again (how an interrupted approval is finished) writes it only if it was not written.
ALTER TABLE held_scores ADD COLUMN approval_logged boolean NOT NULL DEFAULT false;

-- `rank.top_changed` (the projector, core `events/top.rs`): each board's first N as last
-- reported, so that a batch reports its board's first N only when it differs from what was
-- recorded. One row per board read (a period's or a cohort's board id when the board resets),
-- written in the transaction that publishes the batch's outbox rows, so the event is written
-- iff the projection it reports is recorded.
--
-- `seq` is the board's change sequence in Redis when the first N was read (`:q`, moved forward
-- by every projection call that changes the board, in the same atomic step): two projectors
-- may read one board's first N at once and commit in either order, and only a read of a
-- later state (a greater `seq`) replaces the row, so an older read committed late never
-- reports a change back to an earlier first N. `changed_seq` is the `seq` at which `top` last
-- changed, so the upsert's RETURNING says whether this write changed it; `previous` is the
-- first N before that change (the event's `previous`).
CREATE TABLE event_top_state (
    board_id     text PRIMARY KEY,
    seq          bigint NOT NULL,
    top          jsonb NOT NULL,
    previous     jsonb,
    changed_seq  bigint NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
