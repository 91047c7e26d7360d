-- The log's last position (0 when empty) and the greatest position retention deleted (0:
-- none): two index probes and a one-row table.
SELECT coalesce((SELECT position FROM events ORDER BY position DESC LIMIT 1), 0) AS last,
       (SELECT swept_through FROM event_retention) AS swept_through
