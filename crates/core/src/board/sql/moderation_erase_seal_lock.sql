-- Taken by an erasure before moderation_erase.sql (moderation.rs): the close rows of the closed
-- periods in which the user has a frozen row, in one order (two erasures never wait on each
-- other both ways). Two erasures of users of one period then re-seal its digest one after the
-- other (moderation_erase_reseal.sql), each from rows that include the other's pseudonym, and
-- the erasure statement, run after this one, takes its snapshot once the lock is granted.
-- Bounded by the moderation's lock_timeout (contended: the command is run again).
-- $1 user id.
SELECT 1
FROM period_closes c
WHERE (c.board_id, c.period) IN (
    SELECT board_id, period FROM period_standings WHERE user_id = $1
)
ORDER BY c.board_id, c.period
FOR UPDATE OF c
