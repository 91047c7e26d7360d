-- Taken before a change of a board's rule (definition_define.sql): SHARE conflicts with the
-- ROW EXCLUSIVE lock every score command's statement takes on user_scores when it starts, so
-- this waits for the commands in flight to commit and holds new ones until the definer
-- commits. A command held here takes its snapshot after the definer's commit and so sees the
-- new revision (and refuses to run under the old one). It holds commands on every board, for
-- the few milliseconds a definition takes; the wait is bounded by definition_lock_timeout.sql.
-- A per-board lock would hold only that board's commands, but every command would then have
-- to take it; changing a rule is rare (a new board), commands are not.
LOCK TABLE user_scores IN SHARE MODE
