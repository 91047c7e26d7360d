-- Taken by a close after the period ended, in its transaction: waits for every command that
-- holds the board's period lock shared, that is every command that may still land in the
-- period (lb_command_board reads the clock after taking it), and keeps new ones waiting until
-- the close commits (they then read a clock past the period's end). Bounded by the close's
-- lock_timeout.
-- $1 board id.
SELECT pg_advisory_xact_lock(lb_period_lock_key($1))
