-- One sequencer at a time (events/sequence.rs): the lock is held until the transaction ends,
-- so the next sequencer's statements start after this one's positions committed and draw
-- greater ones. Not granted: another process is sequencing; this one skips its turn.
SELECT pg_try_advisory_xact_lock(hashtextextended('lb_event_sequencer', 0)) AS granted
