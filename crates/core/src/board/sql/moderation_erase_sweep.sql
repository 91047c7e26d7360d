-- The erasure's second statement, run under the table lock a ban takes (moderation_lock.sql)
-- once moderation_erase.sql is done: that statement reads the whole events table and runs
-- without the lock (commands go on meanwhile), so a command of the user that committed while
-- it ran (its snapshot taken before) left its entry, event and outbox row under the user's id.
-- The lock waits for the commands still in flight and holds new ones; this statement's
-- snapshot, taken after, sees every command that committed before, and takes what they left:
-- their entries (by user_scores_user), their events (created in the hour before the erasure
-- began, which every command still running then did: found by the BRIN index on created_at)
-- and their outbox rows (by event id), and asks the projection to erase on their boards. A
-- command after the commit starts anew, as after any erasure. Cheap: index lookups and the
-- last hour of events, so the lock is held for milliseconds.
-- $1 user id, $2 pseudonym.
WITH entries AS (
    DELETE FROM user_scores WHERE user_id = $1
    RETURNING board_id, version
),
events AS (
    UPDATE score_events SET user_id = $2, metadata = NULL
    WHERE created_at >= now() - interval '1 hour' AND user_id = $1
    RETURNING event_id
),
outbox_rows AS (
    UPDATE leaderboard_outbox
    SET user_id = $2, metadata = NULL,
        published_at = coalesce(published_at, now()),
        lease_owner = NULL, lease_expires_at = NULL
    WHERE event_id IN (SELECT event_id FROM events)
    RETURNING 1
),
boards AS (
    SELECT board_id, max(version) AS version FROM entries GROUP BY board_id
),
erase AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, score_version, tie, metadata, moderation)
    SELECT gen_random_uuid(), board_id, $1, 0, version + 1, 0, NULL, 'erase' FROM boards
)
SELECT (SELECT count(*) FROM entries) AS entries,
       (SELECT count(*) FROM events) AS events,
       (SELECT count(*) FROM outbox_rows) AS outbox_rows,
       coalesce((SELECT array_agg(board_id ORDER BY board_id) FROM boards), '{}') AS boards
