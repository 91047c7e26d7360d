-- The event log held to the recorded commands before any repair (chaos/event_log.rs), in one
-- snapshot of the log and of its queue (the api's upkeep moves rows from one to the other at
-- any moment; a row is in exactly one of them in any snapshot). Answers one row per problem:
-- 'recorded', a command recorded in score_events (each accepted command, and each board it fed)
-- without exactly one score.accepted of its id on its declared board and stored board, for its
-- user, at its version; 'unrecorded', a score.accepted of an id score_events does not hold;
-- 'accepted', a command the api accepted ($1) without exactly one; and one 'total' row: the
-- recorded commands, and those logged exactly once as they should be.
-- $1 the event ids of the commands the api accepted.
WITH logged AS (
    SELECT event_id, board_id, target, user_id, version
    FROM events WHERE kind = 'score.accepted'
    UNION ALL
    SELECT event_id, board_id, target, user_id, version
    FROM event_queue WHERE kind = 'score.accepted'
),
per AS (
    SELECT s.event_id, count(l.event_id) AS logged,
           count(l.event_id) FILTER (
               WHERE l.board_id = split_part(s.board_id, '~', 1)
                 AND coalesce(l.target, l.board_id) = s.board_id
                 AND l.user_id = s.user_id AND l.version = s.version) AS matching
    FROM score_events s LEFT JOIN logged l ON l.event_id = s.event_id
    GROUP BY s.event_id
)
SELECT 'recorded' AS what, event_id, logged, matching
FROM per WHERE NOT (logged = 1 AND matching = 1)
UNION ALL
SELECT 'unrecorded', l.event_id, 1, 0
FROM logged l WHERE NOT EXISTS (SELECT 1 FROM score_events s WHERE s.event_id = l.event_id)
UNION ALL
SELECT 'accepted', a.id, count(l.event_id), count(l.event_id)
FROM unnest($1::uuid[]) a(id) LEFT JOIN logged l ON l.event_id = a.id
GROUP BY a.id HAVING count(l.event_id) <> 1
UNION ALL
SELECT 'total', NULL, (SELECT count(*) FROM per),
       (SELECT count(*) FROM per WHERE logged = 1 AND matching = 1)
