-- What operators look at and do, kept in PostgreSQL so that it survives a lost projection and
-- any replica can show it (issue 24, the operator console).
--
-- reconciler_passes: one row per reconciler pass, its report as the reconciler logs it
-- (`PassReport`: totals, and up to `reconciler.report_max_boards` boards, those with drift,
-- repairs or errors first). The console's drift history and each board's "last reconcile
-- result" read the newest rows; the insert itself drops rows past the newest 1,000 of its
-- namespace, so the table never grows with time.
--
-- operator_actions: the audit of the console's actions that moderation_actions (V6) does not
-- hold already: board definitions, requeues, rebuild requests, member repairs, logins. Who is
-- the token's name; what and on which board or user, with the action's own details as JSON.
--
-- Expand only: new tables, which the previous release never names.

CREATE TABLE reconciler_passes (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The Redis namespace the pass walked (as reconciler_progress is keyed).
    namespace   text        NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    report      jsonb       NOT NULL
);
CREATE INDEX reconciler_passes_newest ON reconciler_passes (namespace, id DESC);

CREATE TABLE operator_actions (
    id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    actor   text        NOT NULL,
    action  text        NOT NULL,
    board   text        COLLATE "C",
    user_id text        COLLATE "C",
    detail  jsonb       NOT NULL DEFAULT '{}'
);

-- The console's audit log reads moderation_actions newest first too; without this index that
-- read would sort the whole table, which grows with every command. A plain CREATE INDEX (the
-- migration runs in a transaction) blocks moderation commands while it builds: moderation is
-- rare, and the table holds one row per command ever sent.
CREATE INDEX moderation_actions_newest ON moderation_actions (at DESC);
