-- One reconciler pass's report, and the rows of its namespace past the newest 1,000 dropped
-- in the same statement (found through reconciler_passes_newest: bounded, whatever the age).
-- The DELETE's subquery runs on the statement's snapshot, which does not hold the row being
-- inserted: the 999 newest rows it sees and the new one are the 1,000 kept (OFFSET 999).
-- $1 namespace, $2 report.
WITH added AS (
    INSERT INTO reconciler_passes (namespace, report) VALUES ($1, $2) RETURNING id
)
DELETE FROM reconciler_passes
WHERE namespace = $1
  AND id <= (SELECT id FROM reconciler_passes WHERE namespace = $1
             ORDER BY id DESC OFFSET 999 LIMIT 1)
