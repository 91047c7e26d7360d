-- Erases a user (right to erasure; moderation.rs), in the audit row's transaction. In
-- PostgreSQL nothing keeps the user's id or metadata afterwards:
--   user_scores      their entries on every board go (entry counts follow by trigger);
--   removed_entries  their removal tombstones go;
--   banned_users     their ban goes (it names them: an erased id that comes back starts anew);
--   score_events     every event keeps its board, value and score for the board's history,
--                    under the pseudonym $2 (random, recorded nowhere with the id), without
--                    metadata;
--   leaderboard_outbox every row of theirs likewise; a row still pending is marked published
--                    (the erasure supersedes it);
--   moderation_actions earlier audit rows of the user carry the pseudonym;
--   period_standings the frozen standings of closed periods carry the pseudonym, without
--                    metadata (the close's digest then no longer matches:
--                    moderation_erase_reseal.sql re-seals it, and `lbctl period verify`
--                    counts such rows as erased).
-- Then one outbox row per board where the user had an entry or a tombstone asks the
-- projection to take out every trace ('erase': member, version, metadata, distinct score,
-- tombstone); its user_id, the only copy of the id left, is overwritten when it is published
-- (outbox/publish.sql). Event markers (:e:<event id>) hold no user id. Each such board's
-- erased_version_floors row (V12, naming no user) rises to the erasure's version.
-- $1 user id, $2 pseudonym, $3 this action's id (its own audit row already holds $2).
--
-- The event log (migration V20): every event naming the user, as its user or inside its
-- payload (a close's standings, a held score's), carries the pseudonym. A payload names the
-- user as a JSON string equal to the id, which is replaced wherever it stands; the log is read
-- whole, as score_events is (retention bounds it: events.retention_hours). Rows committed
-- while this runs are the sweep's (moderation_erase_sweep.sql, from `log_position` on). First
-- in the WITH: the table `events` is named before the CTE of that name below hides it.
WITH logged AS (
    UPDATE events
    SET user_id = CASE WHEN user_id = $1 THEN $2 ELSE user_id END,
        payload = CASE WHEN strpos(payload::text, to_jsonb($1::text)::text) > 0
                       THEN replace(payload::text, to_jsonb($1::text)::text,
                                    to_jsonb($2::text)::text)::jsonb
                       ELSE payload END
    WHERE user_id = $1 OR strpos(payload::text, to_jsonb($1::text)::text) > 0
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
-- Positions commit in order (events/sequence.rs): every event up to this one was read above.
log_end AS (
    SELECT coalesce(max(position), 0) AS position FROM events
),
entries AS (
    DELETE FROM user_scores WHERE user_id = $1
    RETURNING board_id, version
),
tombstones AS (
    DELETE FROM removed_entries WHERE user_id = $1
    RETURNING board_id, version
),
ban AS (
    DELETE FROM banned_users WHERE user_id = $1 RETURNING user_id
),
events AS (
    UPDATE score_events SET user_id = $2, metadata = NULL WHERE user_id = $1
    RETURNING 1
),
outbox_rows AS (
    UPDATE leaderboard_outbox
    SET user_id = $2, metadata = NULL,
        published_at = coalesce(published_at, now()),
        lease_owner = NULL, lease_expires_at = NULL
    WHERE user_id = $1
    RETURNING 1
),
audits AS (
    UPDATE moderation_actions SET user_id = $2 WHERE user_id = $1 AND action_id <> $3
    RETURNING 1
),
frozen AS (
    UPDATE period_standings SET user_id = $2, metadata = NULL WHERE user_id = $1
    RETURNING 1
),
boards AS (
    SELECT board_id, max(version) AS version
    FROM (SELECT board_id, version FROM entries
          UNION ALL SELECT board_id, version FROM tombstones) t
    GROUP BY board_id
),
erase AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, score_version, tie, metadata, moderation)
    SELECT gen_random_uuid(), board_id, $1, 0, version + 1, 0, NULL, 'erase' FROM boards
    -- Not for an archived period: its keys are dropped (the user's id goes with them once the
    -- grace after the archive is over), and a row would write them back.
    WHERE NOT lb_period_archived(board_id)
),
-- A new entry on these boards starts above the erasure's version (V12): should the user come
-- back, its entry outranks the erasure's row in Redis whichever is projected first.
floors AS (
    INSERT INTO erased_version_floors AS f (board_id, version)
    SELECT board_id, version + 1 FROM boards
    ON CONFLICT (board_id) DO UPDATE SET version = greatest(f.version, EXCLUDED.version)
)
SELECT (SELECT count(*) FROM entries) AS entries,
       (SELECT count(*) FROM tombstones) AS removed_entries,
       EXISTS (SELECT 1 FROM ban) AS ban,
       (SELECT count(*) FROM events) AS events,
       (SELECT count(*) FROM outbox_rows) AS outbox_rows,
       (SELECT count(*) FROM audits) AS audit_rows,
       (SELECT count(*) FROM frozen) AS standings_rows,
       (SELECT position FROM log_end) AS log_position,
       coalesce((SELECT array_agg(board_id ORDER BY board_id) FROM boards), '{}') AS boards
