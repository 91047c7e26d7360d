-- What still waits to be projected, per board and per member, found without walking the whole
-- backlog. Both are partial on the pending predicate (the same as leaderboard_outbox_pending),
-- so they hold only rows not yet projected and stay small however long published rows are kept.
--
-- Per board, oldest first: a read's freshness is the age of its own board's oldest pending row
-- (one index probe, whatever the backlog), and its pending count is a count capped by a LIMIT
-- over the same entries. Rows waiting for a retry are pending too, so they count.
CREATE INDEX leaderboard_outbox_pending_board
    ON leaderboard_outbox (board_id, created_at)
    WHERE published_at IS NULL AND parked_at IS NULL;

-- Per member: whether a member's newer version is still on its way (the reconciler calls such
-- a member lagging, not drifted), one index probe per member.
CREATE INDEX leaderboard_outbox_pending_member
    ON leaderboard_outbox (board_id, user_id, score_version)
    WHERE published_at IS NULL AND parked_at IS NULL;

-- Per board, parked rows: a read's freshness states how many of its board's rows the projector
-- gave up on. Parked rows are rare, so this index is tiny and costs commands nothing.
CREATE INDEX leaderboard_outbox_parked_board
    ON leaderboard_outbox (board_id)
    WHERE parked_at IS NOT NULL AND published_at IS NULL;
