-- After an approved held score was applied (board/guard/review.rs `approve`): one
-- `review.approved` in the event log (migration V20), once, however often the approval is
-- repeated (`approval_logged`, set by this statement); its id derived from the held command's
-- event id. The score itself is reported by its own `score.accepted`, written with it.
-- $1 event id.
WITH marked AS (
    UPDATE held_scores SET approval_logged = true
    WHERE event_id = $1 AND state = 'approved' AND NOT approval_logged
    RETURNING board_id, period_board, user_id, rule, detail, decided_by, reason
)
INSERT INTO event_queue (event_id, kind, board_id, target, user_id, payload)
SELECT lb_event_id('review.approved:' || $1::text), 'review.approved', board_id,
       nullif(period_board, board_id), user_id,
       jsonb_build_object('event_id', $1, 'rule', rule, 'detail', detail, 'actor', decided_by,
                          'reason', reason)
FROM marked
