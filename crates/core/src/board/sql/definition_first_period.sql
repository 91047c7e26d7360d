-- Opens the first period of a board declared with a reset (or whose reset changed, which only
-- a board without entries may do): a period starting at this transaction's second, so that no
-- period of the board starts before it had a schedule. A scheduled period that starts later
-- takes over at its boundary (lb_period_start takes the later of the two). Runs in
-- board/definition/store.rs's transaction, after the definition is written.
-- $1 board id.
INSERT INTO board_resets (board_id, starts_at, actor)
VALUES ($1, date_trunc('second', now()), 'definition')
ON CONFLICT (board_id, starts_at) DO NOTHING
