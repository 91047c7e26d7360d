-- The W3C trace context (`traceparent`) of the request that produced each outbox row, so
-- that the projector's span can link to the request. NULL when the command carried none.
-- A nullable column without a default: adding it rewrites nothing.
ALTER TABLE leaderboard_outbox ADD COLUMN traceparent text;

-- Bounded, so a client's header cannot grow the outbox. NOT VALID: the rows already there are all
-- NULL, so the check need not scan them under the ALTER's lock; new rows are checked.
ALTER TABLE leaderboard_outbox
    ADD CONSTRAINT leaderboard_outbox_traceparent_length
    CHECK (octet_length(traceparent) <= 128) NOT VALID;
