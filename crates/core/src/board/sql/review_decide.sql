-- Records an operator's decision on a held score (board/guard/review.rs): who, when, why. A
-- pending score is approved or rejected; an approved one may be approved again (its score is
-- applied by its own event id, so applying it again changes nothing: this is how an approval
-- interrupted between its record and its score is finished). Anything else changes nothing and
-- answers the state it is in.
-- $1 event id, $2 'approved' or 'rejected', $3 actor, $4 reason.
WITH decided AS (
    UPDATE held_scores
    SET state = $2, decided_at = now(), decided_by = $3, reason = $4
    WHERE event_id = $1
      AND (state = 'pending' OR (state = 'approved' AND $2 = 'approved'))
    RETURNING board_id, period_board, user_id, fields::text AS fields, state, rule, detail
),
-- The event log (migration V20): a rejection is reported here, with the decision (only a
-- pending score is rejected, so once); an approval once its score is applied
-- (review_approved.sql), since an approval whose score is refused is undone.
logged AS (
    INSERT INTO event_queue (event_id, kind, board_id, target, user_id, payload)
    SELECT lb_event_id('review.rejected:' || $1::text), 'review.rejected', board_id,
           nullif(period_board, board_id), user_id,
           jsonb_build_object('event_id', $1, 'rule', rule, 'detail', detail, 'actor', $3,
                              'reason', $4)
    FROM decided
    WHERE $2 = 'rejected'
)
SELECT true AS decided, board_id, period_board, user_id, fields, state FROM decided
UNION ALL
SELECT false, board_id, period_board, user_id, fields::text, state
FROM held_scores
WHERE event_id = $1 AND NOT EXISTS (SELECT 1 FROM decided)
