-- One retention worker at a time across all projectors. A transaction-level lock: it works
-- behind a transaction pooler and cannot outlive its transaction. Not getting it is normal.
SELECT pg_try_advisory_xact_lock(7809987311742280306)
