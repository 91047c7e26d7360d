-- Holds a score for review (board/guard/review.rs) instead of applying it: recorded with its
-- fields, the rule that fired and what its sender is told, under the definition revision the
-- command was judged against (another: nothing written, the caller judges again).
-- $1 event id, $2 board id (as sent), $3 the period it would have written, $4 user id,
-- $5 fields (JSON text), $6 attempt id or NULL, $7 rule, $8 detail, $9 answer (JSON text),
-- $10 revision.
WITH current AS (
    SELECT coalesce((SELECT revision FROM board_definitions WHERE board_id = $2), 0) = $10
        AS current
),
held AS (
    INSERT INTO held_scores
        (event_id, board_id, period_board, user_id, fields, attempt_id, rule, detail, answer)
    SELECT $1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9::jsonb
    WHERE (SELECT current FROM current)
    ON CONFLICT (event_id) DO NOTHING
    RETURNING event_id
),
-- The event log (migration V20, docs/api.md "Events"): one `review.held` when the score is
-- held (a repeat of the command holds nothing, so writes nothing), its id derived from the
-- held command's event id; the score itself is reported by its `score.accepted`, if an
-- approval applies it.
logged AS (
    INSERT INTO event_queue (event_id, kind, board_id, target, user_id, payload)
    SELECT lb_event_id('review.held:' || $1::text), 'review.held', $2, nullif($3, $2), $4,
           jsonb_build_object('event_id', $1, 'rule', $7, 'detail', $8, 'fields', $5::jsonb)
    FROM held
)
SELECT (SELECT current FROM current) AS current, EXISTS (SELECT 1 FROM held) AS held
