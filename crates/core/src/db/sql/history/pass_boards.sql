-- Each of the given boards' entry in the newest pass, among the last 50, that listed it: a
-- board's "last reconcile result". Bounded by 50 reports of at most
-- reconciler.report_max_boards entries each, whatever the number of boards or passes.
-- $1 namespace, $2 boards.
SELECT DISTINCT ON (b.entry->>'board') p.id, p.finished_at, b.entry
FROM (SELECT id, finished_at, report FROM reconciler_passes
      WHERE namespace = $1 ORDER BY id DESC LIMIT 50) p
CROSS JOIN LATERAL jsonb_array_elements(p.report->'boards') AS b(entry)
WHERE b.entry->>'board' = ANY($2)
ORDER BY b.entry->>'board', p.id DESC
