-- Whether PostgreSQL knows a time zone name (the zones date_trunc(…, zone) accepts), so that a
-- definition naming another one is refused with 422 instead of failing every command later.
-- Scans the zone files (a few milliseconds): definitions only, never on a command.
-- $1 time zone name.
SELECT 1 FROM pg_timezone_names WHERE name = $1
