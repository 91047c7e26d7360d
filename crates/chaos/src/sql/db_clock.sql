-- The database clock in seconds since the Unix epoch (the clock commands' periods follow,
-- lb_command_board), for the chaos run's measure of its offset from the local clock.
SELECT extract(epoch FROM clock_timestamp())::float8
