-- Every recorded event, for checking that each accepted command has exactly one.
SELECT event_id, board_id, user_id, delta
FROM score_events
