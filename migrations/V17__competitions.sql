-- ledgerboard schema, version 17: tournaments (issue 39, its first part).
--
-- A competition is a declared board (its id is the board's) with a window, an optional cap on
-- its entrants and whether scores need an entry. Its scores are the board's: the command
-- statement admits a score only inside the window, and, when entry is required, only from an
-- entrant (board/sql/command/head.sql's `admission`).
--
-- Rolling upgrade: new tables only. Version 16's api does not read them, so on an old pod a
-- competition's board takes scores as any board (outside its window, from non-entrants too):
-- upgrade every api before declaring competitions. Rolling back needs nothing undone.
CREATE TABLE competitions (
    competition_id text        COLLATE "C" PRIMARY KEY,
    category       text        COLLATE "C" NOT NULL DEFAULT ''
        CONSTRAINT competitions_category CHECK (char_length(category) <= 64),
    starts_at      timestamptz NOT NULL,
    ends_at        timestamptz NOT NULL,
    entry_required boolean     NOT NULL DEFAULT true,
    max_size       integer
        CONSTRAINT competitions_max_size CHECK (max_size IS NULL OR max_size >= 1),
    metadata       jsonb,
    -- Rank ranges and what they earn: [{"from": 1, "to": 1, "reward": "gold", "amount": 100}],
    -- opaque to ledgerboard.
    prizes         jsonb       NOT NULL DEFAULT '[]',
    -- Entrants so far: the entry statement's upsert on this row decides the cap
    -- (competition/sql/enter.sql), never a count of the entries.
    entrants       integer     NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT competitions_window CHECK (ends_at > starts_at)
);
-- The listing, by state (upcoming, open, ended all follow from the window) and category.
CREATE INDEX competitions_listing ON competitions (category, competition_id);

-- Who entered, and in which order (seat 1 is the first entrant).
CREATE TABLE competition_entries (
    competition_id text        COLLATE "C" NOT NULL REFERENCES competitions (competition_id),
    user_id        text        COLLATE "C" NOT NULL,
    seat           integer     NOT NULL,
    entered_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (competition_id, user_id)
);
