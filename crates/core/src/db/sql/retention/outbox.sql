-- Delete one batch of published rows older than $1 ms (oldest first). $2 batch size.
-- By ctid (a TID scan): `id` has no index outside the pending one.
DELETE FROM leaderboard_outbox
WHERE ctid = ANY (ARRAY(
    SELECT ctid
    FROM leaderboard_outbox
    WHERE published_at IS NOT NULL
      AND published_at < now() - make_interval(secs => $1::float8 / 1000.0)
    ORDER BY published_at
    LIMIT $2))
