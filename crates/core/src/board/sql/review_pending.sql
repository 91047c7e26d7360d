-- How many held scores wait for review (the reconciler's gauge ledgerboard_reviews_pending),
-- counted on the partial index of the queue and capped, so an enormous queue costs a bounded
-- read (the gauge then says the cap, which is already an alarm).
SELECT count(*) AS pending
FROM (SELECT 1 FROM held_scores WHERE state = 'pending' LIMIT 1000000) q
