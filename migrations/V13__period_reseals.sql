-- Re-seals of a closed period's digest by erasures (issue 35).
--
-- A close writes the SHA-256 of its standings' lines (period_closes.digest), and an erasure
-- after it replaces the erased user's id in the frozen rows with a pseudonym: the lines change,
-- and the close's digest can no longer be recomputed (the id it covered is gone on purpose).
-- So the erasure re-seals, in its own transaction, each closed period it touches: it checks the
-- rows with the erased id put back against the period's seal (the close's digest, or the last
-- re-seal's), records whether they matched, and records the digest of the rows as it leaves
-- them. `lbctl period verify` then checks the rows against the newest seal, and the standings
-- hold only if every re-seal found them matching: an edit by hand before an erasure is caught
-- by the erasure, one after it by verify.
--
-- Expand only: a new table, which the previous release never names. Its erasures write no
-- re-seal, so a period it erases from no longer verifies (as before this release).

CREATE TABLE period_reseals (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    board_id      text        COLLATE "C" NOT NULL,
    period        text        COLLATE "C" NOT NULL,
    -- The erasure (its audit row holds its pseudonym, never the erased id).
    action_id     uuid        NOT NULL REFERENCES moderation_actions (action_id),
    -- The rows, with the erased id in place of the pseudonym, matched the seal before.
    prior_matches boolean     NOT NULL,
    -- SHA-256 over the rows' lines as the erasure left them (lb_standings_line).
    digest        bytea       NOT NULL,
    at            timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (board_id, period) REFERENCES period_closes (board_id, period)
);
CREATE INDEX period_reseals_period ON period_reseals (board_id, period, id DESC);
