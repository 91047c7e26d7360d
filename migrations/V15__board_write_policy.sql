-- ledgerboard schema, version 15: who may post scores to a board (issue 38).
--
-- `write_policy` is `server` (service tokens only: every board until now, and the default) or
-- `player` (player tokens too, each writing only its own user id). It is part of the
-- definition: changing it bumps the revision like any other change, so a command validated
-- against the old policy is refused by its statement and judged again under the new one.
--
-- Rolling upgrade: a column with a default (no table rewrite). Version 14's api neither reads
-- it nor accepts player tokens, so a `player` board takes service tokens only there, which is
-- the safe side; rolling back needs nothing undone.
ALTER TABLE board_definitions
    ADD COLUMN write_policy text NOT NULL DEFAULT 'server'
        CONSTRAINT board_definitions_write_policy CHECK (write_policy IN ('server', 'player'));
