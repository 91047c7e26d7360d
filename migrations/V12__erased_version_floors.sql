-- Where a board's versions continue after an erasure (issue 35).
--
-- An erasure deletes the user's entry and asks the projection, with one outbox row at the
-- entry's version + 1, to take out every trace. If the same user id came back, its new entry
-- used to start again at version 1. Should the projector apply that new entry before the
-- erasure's row (two projectors, or a retried batch), Redis still held the old entry at a
-- higher version, so the new one was refused as stale; then the erasure took the member out.
-- Redis was left without a member PostgreSQL has, under a seal that still counted right: no
-- read saw it, only the next reconciler pass.
--
-- A per-board floor fixes the order without remembering who was erased: the highest version
-- an erasure's outbox row carried on the board. A new entry on the board starts above it (and
-- above a removal's tombstone, as before), so a returning user's entry outranks the erasure's
-- row in Redis whichever is projected first. The table names no user: it holds one number per
-- board that ever had an erasure. New users on such a board simply start at a higher version;
-- versions are per entry, increasing, and were never promised to start at 1.
--
-- Expand only: a new table. The previous release's statements do not read it (a returning user
-- then starts at 1, as before); its erasures do not write it.

CREATE TABLE erased_version_floors (
    board_id text   COLLATE "C" PRIMARY KEY,
    -- The highest score_version an erasure's outbox row carried on this board.
    version  bigint NOT NULL CHECK (version > 0)
);
