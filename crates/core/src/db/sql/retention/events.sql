-- Delete one batch of events older than $1 ms whose outbox row is gone. $2 batch size.
-- Past this, a repeated event id would apply again: off unless configured.
DELETE FROM score_events
WHERE event_id = ANY (ARRAY(
    SELECT e.event_id
    FROM score_events e
    WHERE e.created_at < now() - make_interval(secs => $1::float8 / 1000.0)
      AND NOT EXISTS (SELECT 1 FROM leaderboard_outbox o WHERE o.event_id = e.event_id)
    LIMIT $2))
