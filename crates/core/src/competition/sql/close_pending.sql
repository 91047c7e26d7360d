-- Whether an outbox row of the run's boards (the run's period board, each of its cohorts')
-- still waits to be projected: a run closes only once Redis holds what PostgreSQL freezes, as
-- a period does (board/sql/period_close_pending.sql). Two probes of
-- leaderboard_outbox_pending_board: the run's board, and the range of its cohorts'.
-- $1 the run's board id (<board>~<period>).
SELECT EXISTS (
    SELECT 1 FROM leaderboard_outbox
    WHERE published_at IS NULL AND parked_at IS NULL
      AND (board_id = $1 OR (board_id > $1 || '~' AND board_id < $1 || '~~'))
) AS pending
