-- A batch's first N per board (events/top.rs): each board's row of event_top_state is replaced
-- when this read saw a later state (a greater change sequence), and a `rank.top_changed` event
-- is queued for each board whose first N this replacement changed. Run in the transaction that
-- publishes the batch's outbox rows (migration V20 says why).
-- $1 boards read (text[]: a period's or cohort's board id when the board resets), $2 their
-- declared boards (text[]), $3 change sequences (int8[]), $4 first N (text[]: JSON arrays),
-- $5 event ids (uuid[]: derived from board read and sequence, so a retried batch writes the
-- same event). The caller sorts the boards, so concurrent batches lock rows in one order.
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::uuid[])
        AS i(target, board, seq, top, event_id)
),
recorded AS (
    INSERT INTO event_top_state AS s (board_id, seq, top, previous, changed_seq)
    SELECT target, seq, top::jsonb, NULL, seq FROM input ORDER BY target
    ON CONFLICT (board_id) DO UPDATE
    SET seq = EXCLUDED.seq,
        top = EXCLUDED.top,
        previous = CASE WHEN s.top IS DISTINCT FROM EXCLUDED.top THEN s.top ELSE s.previous END,
        changed_seq = CASE WHEN s.top IS DISTINCT FROM EXCLUDED.top
                           THEN EXCLUDED.seq ELSE s.changed_seq END,
        updated_at = now()
    -- An older read (or the same one again: a batch delivered twice) changes nothing.
    WHERE s.seq < EXCLUDED.seq
    RETURNING s.board_id, s.top, s.previous, s.changed_seq = s.seq AS changed
)
INSERT INTO event_queue (event_id, kind, board_id, target, payload)
SELECT i.event_id, 'rank.top_changed', i.board, NULLIF(i.target, i.board),
       jsonb_build_object(
           'top', r.top,
           'previous', r.previous,
           'entered', (SELECT coalesce(jsonb_agg(e -> 'user_id'), '[]')
                       FROM jsonb_array_elements(r.top) e
                       WHERE NOT coalesce(r.previous, '[]') @> jsonb_build_array(
                           jsonb_build_object('user_id', e -> 'user_id'))),
           'left', (SELECT coalesce(jsonb_agg(p -> 'user_id'), '[]')
                    FROM jsonb_array_elements(coalesce(r.previous, '[]')) p
                    WHERE NOT r.top @> jsonb_build_array(
                        jsonb_build_object('user_id', p -> 'user_id'))))
FROM recorded r
JOIN input i ON i.target = r.board_id
-- The first record of a board that is empty reports nothing: nothing entered or left.
WHERE r.changed AND NOT (r.previous IS NULL AND r.top = '[]'::jsonb)
RETURNING event_id
