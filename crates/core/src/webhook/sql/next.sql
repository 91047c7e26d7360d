-- A lane's next events (core webhook/lane.rs): after position $4 and at most $5 positions past
-- it (the window bounds what one call reads however sparse the lane's matches are: the caller
-- moves the lane past a window that matched nothing), of the boards that go by lane $2 of $3
-- (lb_webhook_lane), the kinds $6 and boards $7 (empty: all), at most $8, in position order.
SELECT position, event_id, kind, board_id, target, user_id,
       to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_at,
       extract(epoch FROM occurred_at)::float8 AS occurred_epoch,
       traceparent, score,
       col2, col3, version, improved, prev_score, prev_col2, prev_col3, prev_version,
       payload::text AS payload
FROM events
WHERE position > $4 AND position <= $4 + $5
  AND lb_webhook_lane(board_id, $3) = $2
  AND (cardinality($6::text[]) = 0 OR kind = ANY ($6))
  AND (cardinality($7::text[]) = 0 OR board_id = ANY ($7))
ORDER BY position
LIMIT $8
