-- Wakes the projectors (LISTEN ledgerboard_outbox), sent by wakeup.rs after commands commit.
-- A NOTIFY takes PostgreSQL's one notification lock from its commit to the end of that commit,
-- WAL flush included, so every notifying transaction in the cluster commits one at a time.
-- Inside the command statement it held each command's durable commit under that lock and cut
-- command throughput to a third (docs/performance.md). Here it rides in its own transaction
-- whose commit does not wait for the flush: losing a wake-up in a crash only delays projection
-- until the projectors' next poll, never loses a row.
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT pg_notify('ledgerboard_outbox', '');
COMMIT;
