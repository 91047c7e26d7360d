event AS (
    INSERT INTO score_events
        (event_id, board_id, user_id, delta, submitted, operator, score, version, improved,
         metadata)
    SELECT $1, board_id, $3, delta, $4, (SELECT operator FROM rule), score, version, improved,
           $10::jsonb
    FROM written
    RETURNING board_id, user_id, operator, submitted, metadata::text AS metadata, score,
              version, improved
),
outbox AS (
    INSERT INTO leaderboard_outbox
        (event_id, board_id, user_id, absolute_score, score_version, traceparent, tie, metadata,
         moderation)
    SELECT $1, board_id, $3, score, version, $5, tie, metadata, CASE WHEN hidden THEN 'hide' END
    FROM upserted
)
-- A data-modifying CTE runs whether or not the answer refers to it. Exactly one row answers.
SELECT 'applied' AS outcome, board_id, user_id, operator, submitted, metadata, score, version,
       improved
FROM event
UNION ALL
SELECT 'duplicate', board_id, user_id, operator, submitted, metadata, score, version, improved
FROM prior
UNION ALL
SELECT 'stale_definition', $2, $3, operator, $4, NULL, 0, 0, false
FROM rule
WHERE NOT EXISTS (SELECT 1 FROM prior) AND NOT (SELECT current FROM definition)
UNION ALL
-- Went ahead and recorded nothing: the operator's refusal, nothing written.
SELECT refusal, $2, $3, operator, $4, NULL, 0, 0, false
FROM rule
WHERE refusal IS NOT NULL AND EXISTS (SELECT 1 FROM go) AND NOT EXISTS (SELECT 1 FROM written)
