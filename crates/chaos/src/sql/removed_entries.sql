-- The version each removed entry had reached (the last removal's, one more than the entry's
-- last version): the chaos check counts a member's commands from above it.
SELECT board_id, user_id, version
FROM removed_entries
