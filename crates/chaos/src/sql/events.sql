-- Every recorded event, for checking that each accepted command has exactly one, with its
-- value (the delta of an add board, the score submitted to a best or latest one), the version
-- it recorded and whether it improved the member's score (false only for a best submission
-- that did not beat the standing best).
SELECT event_id, board_id, user_id, coalesce(submitted, delta::bigint) AS value, version, improved
FROM score_events
