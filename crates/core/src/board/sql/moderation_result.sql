-- What a moderation command did (moderation.rs), kept with its audit row so that a repeat of
-- the action id answers the same, and when it did it: the clock now, after the table lock
-- (moderation_lock.sql) was granted and the action written, not the transaction's start (the
-- audit row's default), which came before the wait for the commands in flight. A command that
-- committed while the moderation waited then carries an earlier time than the moderation that
-- re-versioned its entry after it, and a moderation in force at a period's close carries a time
-- before the close's (`period_verify.sql` compares them as they are, with no window).
-- $1 action id, $2 the result (JSON text).
UPDATE moderation_actions SET result = $2::jsonb, at = clock_timestamp()
WHERE action_id = $1
RETURNING to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
