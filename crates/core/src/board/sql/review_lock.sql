-- The first statement of a guarded score command's transaction (board/guard/): one event id at
-- a time, so two arrivals of one new event id cannot decide differently (one held, one
-- applied). A transaction lock: released at COMMIT or ROLLBACK. Its own statement, so the
-- statements after it see whatever the holder before it committed.
-- $1 event id.
SELECT pg_advisory_xact_lock(hashtextextended($1::text, 38))
