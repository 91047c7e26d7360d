-- Moves up to $1 committed queue rows into the log, in `seq` order, each with the next
-- position. Rows of transactions still in flight are not visible yet: they are moved by a
-- later turn, at greater positions (migration V20 explains why that keeps the order).
WITH moved AS (
    DELETE FROM event_queue
    WHERE seq IN (SELECT seq FROM event_queue ORDER BY seq LIMIT $1)
    RETURNING *
)
INSERT INTO events
    (position, event_id, kind, board_id, target, user_id, occurred_at, traceparent, score,
     col2, col3, version, improved, prev_score, prev_col2, prev_col3, prev_version, payload)
SELECT nextval('event_positions'), event_id, kind, board_id, target, user_id, occurred_at,
       traceparent, score, col2, col3, version, improved, prev_score, prev_col2, prev_col3,
       prev_version, payload
FROM (SELECT * FROM moved ORDER BY seq) m
