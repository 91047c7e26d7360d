    -- add: any delta goes ahead; the bounds hold the score it makes (in the upsert).
),
-- add: the member's score grows by the delta. A new member starts at the delta unless it
-- leaves [$8, $9]; an existing one only if the sum stays within them (then nothing is
-- written: 'score_out_of_range'). A delta of 0 keeps the tie (the score was reached before).
rule AS (
    SELECT 'add'::text AS operator, 'score_out_of_range'::text AS refusal
),
upserted AS (
    INSERT INTO user_scores AS s (board_id, user_id, score, version, tie, metadata, hidden)
    SELECT go.board_id, $3, $4, 1 + greatest(
               coalesce((SELECT r.version FROM removed_entries r
                         WHERE r.board_id = go.board_id AND r.user_id = $3), 0),
               coalesce((SELECT f.version FROM erased_version_floors f
                         WHERE f.board_id = go.board_id), 0)),
           tie, $10::jsonb, EXISTS (SELECT 1 FROM banned_users b WHERE b.user_id = $3)
    FROM go
    WHERE $4 BETWEEN $8 AND $9
    ON CONFLICT (board_id, user_id) DO UPDATE
        SET score = s.score + EXCLUDED.score,
            version = s.version + 1,
            tie = CASE WHEN EXCLUDED.score = 0 THEN s.tie ELSE EXCLUDED.tie END,
            metadata = coalesce(EXCLUDED.metadata, s.metadata),
            updated_at = now()
        WHERE s.score + EXCLUDED.score BETWEEN $8 AND $9
    RETURNING board_id, score, version, tie, metadata, hidden
),
written AS (
    -- delta keeps version 4's statements able to read the event during a rolling upgrade.
    SELECT board_id, score, version, true AS improved,
           CASE WHEN $4 BETWEEN -1000 AND 1000 THEN $4::integer END AS delta
    FROM upserted
),
