-- Every recorded event, for checking that each accepted command has exactly one on its board
-- and on every board it fed, with its value (the delta of an add board, the score submitted to
-- a best or latest one: the first column's, and the other columns' in order-key form, NULL past
-- the board's columns), the version it recorded, whether it improved the member's tuple (false
-- only for a best submission that did not beat the standing best), and on a fed board's event
-- the event id the command was sent with.
SELECT event_id, board_id, user_id, coalesce(submitted, delta::bigint) AS value, submitted2,
       submitted3, version, improved, source_event
FROM score_events
