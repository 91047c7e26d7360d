-- Whether any outbox row of the period still waits to be projected (a period is closed only
-- once Redis holds what PostgreSQL freezes). One probe of leaderboard_outbox_pending_board.
-- Parked rows do not count: they wait for an operator, not for the projector.
-- $1 the period's board id (<board>~<period>).
SELECT EXISTS (
    SELECT 1 FROM leaderboard_outbox
    WHERE board_id = $1 AND published_at IS NULL AND parked_at IS NULL
) AS pending
