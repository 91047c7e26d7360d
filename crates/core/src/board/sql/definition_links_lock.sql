-- Taken before a change of a board's links or columns (board/definition/store.rs): SHARE ROW
-- EXCLUSIVE conflicts with itself and with the ROW EXCLUSIVE lock of every other definer's
-- write, so two definers cannot each pass definition_links.sql's checks against the other's
-- old definition (A feeds B declared beside B feeds A). Commands never take it: they read
-- board_definitions only. Bounded by definition_lock_timeout.sql, like the entries' lock.
LOCK TABLE board_definitions IN SHARE ROW EXCLUSIVE MODE
