-- Removes one user's entry from one board (moderation.rs), in the audit row's transaction.
-- The row goes from user_scores (its score, tie and metadata with it; the entry count follows
-- by trigger); its version, one more than the last one, is kept in removed_entries (a later
-- entry of the user continues from it: board/sql/*.sql), and the outbox row asks the
-- projection to hide the member at that version (a tombstone: a score of the old entry
-- projected late is older, so stale). Removing an entry that is not there writes nothing.
-- A banned user's hidden entry is removed the same way.
-- $1 board, $2 user id.
WITH gone AS (
    DELETE FROM user_scores WHERE board_id = $1 AND user_id = $2
    RETURNING board_id, user_id, score, columns, col2, col3, version + 1 AS version, tie, hidden
),
tombstone AS (
    INSERT INTO removed_entries (board_id, user_id, version)
    SELECT board_id, user_id, version FROM gone
    ON CONFLICT (board_id, user_id) DO UPDATE SET version = EXCLUDED.version
),
outbox AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, columns, col2, col3, score_version, tie,
         metadata, moderation)
    SELECT gen_random_uuid(), board_id, user_id, score, columns, col2, col3, version, tie, NULL,
           'hide'
    FROM gone
    -- Not for an archived period: its keys are dropped, and a row would write them back
    -- (moderation_ban.sql).
    WHERE NOT lb_period_archived(board_id)
)
SELECT count(*) AS entries, max(score) AS score, max(version) AS version,
       coalesce(bool_or(hidden), false) AS was_hidden
FROM gone
