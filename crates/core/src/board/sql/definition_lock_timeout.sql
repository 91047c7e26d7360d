-- How long the definer's transaction waits for a lock (the table lock of
-- definition_lock_entries.sql, a concurrent definer's row) before giving up with
-- lock_not_available (db/errors.rs: contended, the api answers 503, retry later). While it
-- waits, new commands queue behind it, so the bound is short. Local: ends with the transaction.
-- $1 the bound, as PostgreSQL reads it ('2000ms').
SELECT set_config('lock_timeout', $1, true)
