      AND $4 BETWEEN $8 AND $9 AND $13 BETWEEN $15 AND $16 AND $14 BETWEEN $17 AND $18
),
-- latest: the member's tuple becomes the submitted one, whatever it was (the bounds are
-- checked in `go`). A submission of the tuple the member holds is one more version with the
-- same tuple, and keeps the tie (the tuple was reached before); any other tuple draws a new
-- tie on earliest boards. It always writes: no refusal.
rule AS (
    SELECT 'latest'::text AS operator, NULL::text AS refusal
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
    ON CONFLICT (board_id, user_id) DO UPDATE
        SET score = EXCLUDED.score,
            col2 = EXCLUDED.col2,
            col3 = EXCLUDED.col3,
            version = s.version + 1,
            tie = CASE WHEN (EXCLUDED.score, EXCLUDED.col2, EXCLUDED.col3) = (s.score, s.col2, s.col3)
                       THEN s.tie ELSE EXCLUDED.tie END,
            metadata = coalesce(EXCLUDED.metadata, s.metadata),
            updated_at = now()
    RETURNING board_id, score, col2, col3, version, tie, metadata, hidden,
              xmax = 0 AS inserted
),
written AS (
    SELECT board_id, score, col2, col3, version, true AS improved, NULL::integer AS delta
    FROM upserted
),
