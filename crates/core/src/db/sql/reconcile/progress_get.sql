-- Where the reconciler's walk over boards stopped last, for this Redis namespace ($1).
SELECT last_board FROM reconciler_progress WHERE namespace = $1
