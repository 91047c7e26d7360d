-- The reconciler walks boards in byte order and records the last board it finished, so a pass
-- cut short (lost lock, shutdown, a bounded pass) is continued by the next one, on any replica,
-- instead of starting again from the first board: with many boards, the last ones would
-- otherwise be reached only by passes that never stop early. Keyed by the Redis namespace, the
-- projection the walk is about. In PostgreSQL, not Redis: it must survive a lost projection.
CREATE TABLE reconciler_progress (
    namespace  text        PRIMARY KEY,
    last_board text        COLLATE "C" NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
