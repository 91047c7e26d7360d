-- The newest passes of a namespace, newest first. $1 namespace, $2 limit.
SELECT id, finished_at, report
FROM reconciler_passes
WHERE namespace = $1
ORDER BY id DESC
LIMIT $2
