-- Ends the daemons' sessions on the run's own database (the chaos run's PostgreSQL fault).
-- $1 database name. Returns how many were ended.
SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS terminated
FROM pg_stat_activity
WHERE datname = $1
  AND application_name LIKE 'ledgerboard-%'
  AND pid <> pg_backend_pid()
