-- Records that board $2 of namespace $1 was reconciled to its end: the next pass, on whichever
-- replica, starts after it.
INSERT INTO reconciler_progress (namespace, last_board, updated_at)
VALUES ($1, $2, now())
ON CONFLICT (namespace) DO UPDATE SET last_board = excluded.last_board, updated_at = excluded.updated_at
