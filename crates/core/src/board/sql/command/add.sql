    -- add: any delta goes ahead; the bounds hold the score it makes (in the upsert).
),
-- add: the member's tuple grows by the deltas, column by column. A new member starts at the
-- deltas unless one leaves its column's bounds ([$8, $9], [$15, $16], [$17, $18]); an existing
-- one only if every sum stays within them (then nothing is written: 'score_out_of_range').
-- Deltas of 0 keep the tie (the tuple was reached before).
rule AS (
    SELECT 'add'::text AS operator, 'score_out_of_range'::text AS refusal
),
upserted AS (
    INSERT INTO user_scores AS s
        (board_id, user_id, score, columns, col2, col3, version, tie, metadata, hidden)
    SELECT go.board_id, $3, $4, $12, $13, $14, 1 + greatest(
               coalesce((SELECT r.version FROM removed_entries r
                         WHERE r.board_id = go.board_id AND r.user_id = $3), 0),
               coalesce((SELECT f.version FROM erased_version_floors f
                         WHERE f.board_id = go.board_id), 0)),
           tie, $10::jsonb, EXISTS (SELECT 1 FROM banned_users b WHERE b.user_id = $3)
    FROM go
    WHERE $4 BETWEEN $8 AND $9 AND $13 BETWEEN $15 AND $16 AND $14 BETWEEN $17 AND $18
    ON CONFLICT (board_id, user_id) DO UPDATE
        SET score = s.score + EXCLUDED.score,
            col2 = s.col2 + EXCLUDED.col2,
            col3 = s.col3 + EXCLUDED.col3,
            version = s.version + 1,
            tie = CASE WHEN (EXCLUDED.score, EXCLUDED.col2, EXCLUDED.col3) = (0, 0, 0)
                       THEN s.tie ELSE EXCLUDED.tie END,
            metadata = coalesce(EXCLUDED.metadata, s.metadata),
            updated_at = now()
        WHERE s.score + EXCLUDED.score BETWEEN $8 AND $9
          AND s.col2 + EXCLUDED.col2 BETWEEN $15 AND $16
          AND s.col3 + EXCLUDED.col3 BETWEEN $17 AND $18
    RETURNING board_id, score, col2, col3, version, tie, metadata, hidden,
              xmax = 0 AS inserted
),
written AS (
    -- delta keeps version 4's statements able to read the event during a rolling upgrade.
    SELECT board_id, score, col2, col3, version, true AS improved,
           CASE WHEN $4 BETWEEN -1000 AND 1000 THEN $4::integer END AS delta
    FROM upserted
),
