-- ledgerboard schema, version 1.
--
-- PostgreSQL is the source of truth: user_scores holds every authoritative score,
-- score_events is the idempotency record of every command, leaderboard_outbox carries each
-- change (absolute score + version) to the Redis projection.
--
-- Text ids use COLLATE "C" (byte order), the order Redis gives sorted-set members of equal
-- score, so index order and tie-breaks agree between the database and the projection.

CREATE TABLE score_events (
    event_id   uuid        PRIMARY KEY,
    board_id   text        COLLATE "C" NOT NULL,
    user_id    text        COLLATE "C" NOT NULL,
    delta      integer     NOT NULL CONSTRAINT score_events_delta_range CHECK (delta BETWEEN -1000 AND 1000),
    -- The score and version that this event produced: a repeated command answers with them.
    score      bigint      NOT NULL,
    version    bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE user_scores (
    board_id   text        COLLATE "C" NOT NULL
        CONSTRAINT user_scores_board_id_format CHECK (board_id ~ '^[A-Za-z0-9_.-]{1,64}$'),
    user_id    text        COLLATE "C" NOT NULL
        CONSTRAINT user_scores_user_id_length CHECK (octet_length(user_id) BETWEEN 1 AND 128),
    -- A Redis sorted-set score is a double: exact for integers within ±(2^53 - 1) only.
    score      bigint      NOT NULL
        CONSTRAINT user_scores_score_range CHECK (score BETWEEN -9007199254740991 AND 9007199254740991),
    version    bigint      NOT NULL CONSTRAINT user_scores_version_positive CHECK (version > 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (board_id, user_id)
);

-- `id` gives commit-ish order to the claim. It deliberately has no index of its own (no
-- primary key on it): the only index ordered by id is the pending one below, so the claim's
-- `ORDER BY id LIMIT n` can only be served by it. With a plain index on id, statistics taken
-- while the outbox was all pending (a backlog) made the planner walk that index through every
-- row already published: each claim got slower as the drain went on (measured: 80 ms and 200k
-- buffer hits per claim halfway through a 200k-row backlog). Every statement that touches a
-- row by id therefore also states the pending predicate (see db/sql/outbox_*.sql).
-- The leaderboard order of the database reads (the fallback when the projection lags, and
-- strong reads): score descending, ties by user id descending in byte order, which is the
-- order Redis's ZRANGE … REV gives.
CREATE INDEX user_scores_rank ON user_scores (board_id, score DESC, user_id DESC);

CREATE TABLE leaderboard_outbox (
    event_id        uuid        PRIMARY KEY REFERENCES score_events (event_id),
    id              bigserial   NOT NULL,
    board_id        text        COLLATE "C" NOT NULL,
    user_id         text        COLLATE "C" NOT NULL,
    absolute_score  bigint      NOT NULL,
    score_version   bigint      NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz,
    -- Retries: how often projection failed, when the row may be tried again, why it failed,
    -- and when it was parked (taken out of the claim after too many attempts).
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    parked_at       timestamptz,
    -- Leased-claim mode: which projector holds the row and until when (database clock).
    lease_owner      text,
    lease_expires_at timestamptz
);

-- The claim reads pending rows in id order; this index holds only them, so it stays small
-- however long published rows are kept. The INCLUDE columns let the claim filter due and
-- unleased rows, and the freshness query read the oldest age, from the index alone.
CREATE INDEX leaderboard_outbox_pending
    ON leaderboard_outbox (id)
    INCLUDE (next_attempt_at, lease_expires_at, created_at)
    WHERE published_at IS NULL AND parked_at IS NULL;

-- Retention deletes published rows oldest first.
CREATE INDEX leaderboard_outbox_published
    ON leaderboard_outbox (published_at)
    WHERE published_at IS NOT NULL;

-- Parked rows, for `lbctl parked list|requeue` and the parked count.
CREATE INDEX leaderboard_outbox_parked
    ON leaderboard_outbox (id)
    WHERE parked_at IS NOT NULL AND published_at IS NULL;

-- Event retention (off by default) deletes by age; rows arrive in time order, so a BRIN index
-- serves that range at almost no cost to the command path.
CREATE INDEX score_events_created_at ON score_events USING brin (created_at);

-- The outbox churns (insert, update, delete): vacuum and analyze it by row count rather than
-- by a fraction of its size, so its statistics never describe a table that no longer exists
-- (a plan built on an empty outbox and kept under load was the cause of a 4x slowdown).
ALTER TABLE leaderboard_outbox SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0
);
