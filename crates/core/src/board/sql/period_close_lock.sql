-- Taken by a close after the period ended, in a transaction of its own that commits at once:
-- waits for every command that holds the board's period lock shared, that is every command
-- that may still land in the period (lb_command_board reads the clock after taking it); a
-- command that comes after reads a clock past the period's end. The standings are written in
-- the next transaction, so the board's new commands wait only for this instant. Bounded by the
-- close's lock_timeout.
-- $1 board id.
SELECT pg_advisory_xact_lock(lb_period_lock_key($1))
