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
-- $1 user id, $2 pseudonym, $3 the event log's last position moderation_erase.sql saw.
--
-- The event log's rows that committed after the erasure's statement read it: the queue (a few
-- rows: the sequencer empties it every events.sequence_interval_ms) and the log past the last
-- position that statement saw, $3 (by the primary key), as moderation_erase.sql rewrites them.
-- First in the WITH: the table `events` is named before the CTE of that name below hides it.
WITH logged AS (
    UPDATE events
    SET user_id = CASE WHEN user_id = $1 THEN $2 ELSE user_id END,
        payload = CASE WHEN strpos(payload::text, to_jsonb($1::text)::text) > 0
                       THEN replace(payload::text, to_jsonb($1::text)::text,
                                    to_jsonb($2::text)::text)::jsonb
                       ELSE payload END
    WHERE position > $3
      AND (user_id = $1 OR strpos(payload::text, to_jsonb($1::text)::text) > 0)
    RETURNING 1
),
queued AS (
    UPDATE event_queue
    SET user_id = CASE WHEN user_id = $1 THEN $2 ELSE user_id END,
        payload = CASE WHEN strpos(payload::text, to_jsonb($1::text)::text) > 0
                       THEN replace(payload::text, to_jsonb($1::text)::text,
                                    to_jsonb($2::text)::text)::jsonb
                       ELSE payload END
    WHERE user_id = $1 OR strpos(payload::text, to_jsonb($1::text)::text) > 0
    RETURNING 1
),
entries AS (
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
