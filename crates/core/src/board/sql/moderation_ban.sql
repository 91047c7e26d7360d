-- Bans a user (moderation.rs), in the audit row's transaction and after moderation_lock.sql:
-- the user joins banned_users and each of their visible entries, on every board, is hidden
-- with one more version (score, other columns, tie and metadata kept for the unban), with an outbox row that
-- asks the projection to hide the member at that version. Banning a banned user writes
-- nothing. Score commands for the user go on being applied, hidden (board/sql/*.sql).
-- $1 action id, $2 user id.
WITH banned AS (
    INSERT INTO banned_users (user_id, action_id) VALUES ($2, $1)
    ON CONFLICT (user_id) DO NOTHING
    RETURNING user_id
),
hidden AS (
    UPDATE user_scores
    SET hidden = true, version = version + 1, updated_at = now()
    WHERE user_id = $2 AND NOT hidden AND EXISTS (SELECT 1 FROM banned)
    RETURNING board_id, user_id, score, columns, col2, col3, version, tie, metadata
),
outbox AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, columns, col2, col3, score_version, tie,
         metadata, moderation)
    SELECT gen_random_uuid(), board_id, user_id, score, columns, col2, col3, version, tie,
           metadata, 'hide'
    FROM hidden
    -- An archived period is read from PostgreSQL alone and its keys are dropped (or about to
    -- be): a row for it would write them back, and nothing would drop them again.
    WHERE NOT lb_period_archived(board_id)
)
SELECT EXISTS (SELECT 1 FROM banned) AS changed, count(*) AS entries,
       coalesce(array_agg(board_id ORDER BY board_id) FILTER (WHERE board_id IS NOT NULL),
                '{}') AS boards
FROM hidden
