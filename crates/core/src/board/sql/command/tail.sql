event AS (
    -- The other columns only where the board has them (NULL past its columns).
    INSERT INTO score_events
        (event_id, board_id, user_id, delta, submitted, submitted2, submitted3, operator, score,
         col2, col3, version, improved, metadata, source_event)
    SELECT $1, board_id, $3, delta, $4, CASE WHEN $12 >= 2 THEN $13 END,
           CASE WHEN $12 >= 3 THEN $14 END, (SELECT operator FROM rule), score,
           CASE WHEN $12 >= 2 THEN col2 END, CASE WHEN $12 >= 3 THEN col3 END, version,
           improved, $10::jsonb, $19
    FROM written
    RETURNING board_id, user_id, operator, submitted, submitted2, submitted3,
              metadata::text AS metadata, score, col2, col3, version, improved
),
-- The event log (migration V20, core events/): one `score.accepted` per recorded event, with
-- the member's tuple before it (`held`, head.sql: read under the member's row lock). A member
-- whose first row another command inserted after this statement's snapshot had nothing to
-- lock: the upsert wrote on top of that row, whose tuple this statement cannot see, so
-- `lb_event_race` raises a serialization failure and the caller runs the statement again (it
-- then finds and locks the row). A submission that does not improve answers the standing
-- tuple, which is also the previous one.
logged AS (
    INSERT INTO event_queue
        (event_id, kind, board_id, target, user_id, traceparent, score, col2, col3, version,
         improved, prev_score, prev_col2, prev_col3, prev_version)
    SELECT $1, 'score.accepted', $2, nullif(e.board_id, $2), $3, $5, e.score, e.col2, e.col3,
           e.version, e.improved, b.score, b.col2, b.col3, b.version
    FROM event e LEFT JOIN held b ON true
    WHERE CASE
              WHEN NOT e.improved THEN true
              WHEN coalesce((SELECT inserted FROM upserted), false) THEN true
              WHEN b.version = e.version - 1 THEN true
              ELSE lb_event_race()
          END
),
outbox AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, columns, col2, col3, score_version,
         traceparent, tie, metadata, moderation)
    SELECT $1, board_id, $3, score, $12, col2, col3, version, $5, tie, metadata,
           CASE WHEN hidden THEN 'hide' END
    FROM upserted
),
attempt_used AS (
    -- The attempt is used by this command once its event is recorded (a best submission that
    -- does not improve is recorded too: its run was played).
    UPDATE attempts SET used_by = $1, used_at = clock_timestamp()
    WHERE attempt_id = $20 AND EXISTS (SELECT 1 FROM event)
)
-- A data-modifying CTE runs whether or not the answer refers to it. Exactly one row answers;
-- every row ends with the event id that had used the command's attempt and a too fast one's
-- wait in ms (NULL without an attempt).
SELECT 'applied' AS outcome, board_id, user_id, operator, submitted, submitted2, submitted3,
       metadata, score, col2, col3, version, improved,
       (SELECT used_by FROM attempt_verdict) AS attempt_used_by,
       (SELECT wait_ms FROM attempt_verdict) AS attempt_wait_ms
FROM event
UNION ALL
SELECT 'duplicate', board_id, user_id, operator, submitted, submitted2, submitted3, metadata,
       score, col2, col3, version, improved,
       (SELECT used_by FROM attempt_verdict), (SELECT wait_ms FROM attempt_verdict)
FROM prior
UNION ALL
SELECT 'stale_definition', $2, $3, operator, $4, NULL, NULL, NULL, 0, NULL, NULL, 0, false,
       NULL, NULL
FROM rule
WHERE NOT EXISTS (SELECT 1 FROM prior) AND NOT (SELECT current FROM definition)
UNION ALL
-- Its attempt or its competition refused it: nothing written.
SELECT (SELECT why FROM barred), $2, $3, operator, $4, NULL, NULL, NULL, 0, NULL,
       NULL, 0, false, (SELECT used_by FROM attempt_verdict),
       (SELECT wait_ms FROM attempt_verdict)
FROM rule
WHERE NOT EXISTS (SELECT 1 FROM prior) AND (SELECT current FROM definition)
  AND (SELECT why FROM barred) IS NOT NULL
UNION ALL
-- Went ahead and recorded nothing: the operator's refusal, nothing written.
SELECT refusal, $2, $3, operator, $4, NULL, NULL, NULL, 0, NULL, NULL, 0, false, NULL, NULL
FROM rule
WHERE refusal IS NOT NULL AND EXISTS (SELECT 1 FROM go) AND NOT EXISTS (SELECT 1 FROM written)
