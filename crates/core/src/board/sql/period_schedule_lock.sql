-- The board's period lock, exclusively (lb_period_lock_key, migration V7): commands of the
-- board hold it shared while they read the clock, so a boundary written under it is in the
-- future for every command still to come, and for none already in. Held to the commit.
-- $1 board id.
SELECT pg_advisory_xact_lock(lb_period_lock_key($1))
