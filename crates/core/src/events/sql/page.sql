-- The feed (GET /v1/events): the events after position $1 and up to position $2 (inclusive:
-- the end of the window, which bounds what one call reads however sparse the filter's matches,
-- and never past the log's last position as the caller read it, so that a page never returns
-- an event past the cursor it answers), of the kinds $3 and boards $4 (empty: all), at most $5
-- of them, in position order. The caller pages on from the last event returned, or from $2
-- when fewer than $5 matched.
SELECT position, event_id, kind, board_id, target, user_id,
       to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_at,
       traceparent, score,
       col2, col3, version, improved, prev_score, prev_col2, prev_col3, prev_version,
       payload::text AS payload
FROM events
WHERE position > $1 AND position <= $2
  AND (cardinality($3::text[]) = 0 OR kind = ANY ($3))
  AND (cardinality($4::text[]) = 0 OR board_id = ANY ($4))
ORDER BY position
LIMIT $5
