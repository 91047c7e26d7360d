      AND $4 BETWEEN $8 AND $9 AND $13 BETWEEN $15 AND $16 AND $14 BETWEEN $17 AND $18
),
-- best: the member keeps the better of its tuple and the submitted one, by the board's order:
-- the tuples (score, col2, col3) compared whole, column by column (order-key form, so in the
-- board's direction), and the better one kept whole, never a mix of two submissions.
-- An improving submission (or a member's first): new tuple, one more version, a new tie on
-- earliest boards, the submission's metadata (absent: none), an outbox row. A submission that
-- does not improve (equal included: the standing one was reached first) changes nothing and
-- writes no outbox row, but is recorded (its event id is used) with improved = false and the
-- standing tuple and version, which is what it answers, now and on every repeat. The standing
-- row is the one `held` (head.sql) locked; a row inserted by a concurrent first submission
-- after the statement's snapshot (the ON CONFLICT waited for it and found it better) was not
-- there to lock: then the answer says 'retry', nothing is written, and the caller runs the
-- statement again.
rule AS (
    SELECT 'best'::text AS operator, 'retry'::text AS refusal
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
            tie = EXCLUDED.tie,
            metadata = EXCLUDED.metadata,
            updated_at = now()
        WHERE CASE WHEN $11 = 1
                   THEN (EXCLUDED.score, EXCLUDED.col2, EXCLUDED.col3) > (s.score, s.col2, s.col3)
                   ELSE (EXCLUDED.score, EXCLUDED.col2, EXCLUDED.col3) < (s.score, s.col2, s.col3)
              END
    RETURNING board_id, score, col2, col3, version, tie, metadata, hidden,
              xmax = 0 AS inserted
),
standing AS (
    -- The tuple the upsert compared with: `held` (head.sql) read it under the row lock.
    SELECT (SELECT board_id FROM go) AS board_id, score, col2, col3, version FROM held
    WHERE EXISTS (SELECT 1 FROM go) AND NOT EXISTS (SELECT 1 FROM upserted)
),
written AS (
    SELECT board_id, score, col2, col3, version, true AS improved, NULL::integer AS delta
    FROM upserted
    UNION ALL
    SELECT board_id, score, col2, col3, version, false, NULL FROM standing
),
