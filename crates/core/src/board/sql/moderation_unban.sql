-- Lifts a user's ban (moderation.rs), in the audit row's transaction and after
-- moderation_lock.sql: the user leaves banned_users and each of their hidden entries is shown
-- again with one more version and the score, other columns, tie and metadata it holds (the ban's, plus any
-- commands applied while banned), with an outbox row that places the member at that state.
-- The players it outranks move down again. Unbanning a user who is not banned writes nothing.
-- $1 user id.
WITH unbanned AS (
    DELETE FROM banned_users WHERE user_id = $1 RETURNING user_id
),
shown AS (
    UPDATE user_scores
    SET hidden = false, version = version + 1, updated_at = now()
    WHERE user_id = $1 AND hidden AND EXISTS (SELECT 1 FROM unbanned)
    RETURNING board_id, user_id, score, columns, col2, col3, version, tie, metadata
),
outbox AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, columns, col2, col3, score_version, tie,
         metadata)
    SELECT gen_random_uuid(), board_id, user_id, score, columns, col2, col3, version, tie,
           metadata
    FROM shown
    -- Not for an archived period: its keys are dropped, and a row would write them back
    -- (moderation_ban.sql).
    WHERE NOT lb_period_archived(board_id)
)
SELECT EXISTS (SELECT 1 FROM unbanned) AS changed, count(*) AS entries,
       coalesce(array_agg(board_id ORDER BY board_id) FILTER (WHERE board_id IS NOT NULL),
                '{}') AS boards
FROM shown
