-- Deletes attempts a day past their expiry, oldest first, at most 5,000 per call (the
-- reconciler's whole passes call it): by the index attempts_expiry, so a call costs what it
-- deletes. A score command repeated that late with a swept attempt is refused as
-- attempt_unknown; its first run's answer stands.
DELETE FROM attempts
WHERE attempt_id IN (
    SELECT attempt_id FROM attempts
    WHERE expires_at < now() - interval '1 day'
    ORDER BY expires_at
    LIMIT 5000
)
