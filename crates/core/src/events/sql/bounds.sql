-- The log's last position (0 when empty) and the greatest position retention deleted (0:
-- none): two index probes and a one-row table. Retention may delete every event: the last
-- position is then the last one it deleted, so that the head a reader is told never goes back.
SELECT greatest(coalesce((SELECT position FROM events ORDER BY position DESC LIMIT 1), 0),
                (SELECT swept_through FROM event_retention)) AS last,
       (SELECT swept_through FROM event_retention) AS swept_through
