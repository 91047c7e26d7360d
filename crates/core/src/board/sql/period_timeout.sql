-- A period's close and its verification read and write every entry of a period (a million and
-- more): their transaction gets a statement bound of its own, longer than the sessions'
-- (database.statement_timeout_ms, sized for commands and reads). Local: ends with the
-- transaction. They run in the reconciler and lbctl, never on a request path.
-- $1 the bound, as PostgreSQL reads it ('600000ms').
SELECT set_config('statement_timeout', $1, true)
