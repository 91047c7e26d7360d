-- Taken by a ban and an unban before they change a user's entries (moderation.rs): SHARE
-- conflicts with the ROW EXCLUSIVE lock every score command's statement takes on user_scores,
-- so this waits for the commands in flight and holds new ones until the ban commits. A command
-- held here takes its snapshot after the commit, so it sees the ban (banned_users) and writes
-- a new entry hidden: no entry of a banned user is ever written visible after its ban. The
-- wait is bounded by definition_lock_timeout.sql (2 s, then 503 contended); it holds commands
-- on every board for the milliseconds a ban takes, as a change of a board's rule does.
LOCK TABLE user_scores IN SHARE MODE
