-- Records one moderation command (moderation.rs), once per action id: the audit row (who: the
-- token's name, when: the database clock, set again by moderation_result.sql once the action
-- is written, why: the reason) with a SHA-256 of the command's
-- payload. A first arrival inserts it ('inserted' true) and the caller then runs the action in
-- the same transaction; a repeat answers the stored row, `same` saying whether its payload is
-- the one recorded (false: the id was reused for another command, 409). Concurrent arrivals of
-- one new id: the later one waits on the first's insert, then finds it committed but outside
-- its snapshot, so no row comes back; the caller runs the transaction again.
-- $1 action id, $2 action, $3 board (NULL for a user-wide action), $4 user id as recorded (an
-- erasure records a pseudonym), $5 reason, $6 actor, $7 the payload (canonical JSON text).
WITH inserted AS (
    INSERT INTO moderation_actions (action_id, action, board_id, user_id, reason, actor, digest)
    VALUES ($1, $2, $3, $4, $5, $6, sha256(convert_to($7, 'UTF8')))
    ON CONFLICT (action_id) DO NOTHING
    RETURNING at, result
)
SELECT true AS inserted, true AS same,
       to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at,
       result::text AS result, $6::text AS actor
FROM inserted
UNION ALL
SELECT false, m.digest = sha256(convert_to($7, 'UTF8')),
       to_char(m.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), m.result::text, m.actor
FROM moderation_actions m
WHERE m.action_id = $1 AND NOT EXISTS (SELECT 1 FROM inserted)
