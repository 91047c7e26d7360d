-- In place of guards.sql, for a command with no attempt ($20 NULL) on a board the api does
-- not know to be a competition (operator.rs's unguarded statements): building and running the
-- guards for every command cost PostgreSQL about 15% of a command (docs/performance.md), and
-- neither can refuse such a command unless the board is a competition. Whether it is can
-- change without the board's revision changing (declaring a competition over a board does not
-- touch its definition), so it is probed here, in the statement's snapshot: a competition's
-- command answers 'guarded', writes nothing, and the caller runs the guarded statement (and
-- sends that board's commands there from then on: board/guarded.rs).
attempt_verdict AS (
    SELECT NULL::text AS refusal, NULL::uuid AS used_by, NULL::bigint AS wait_ms
),
barred AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM competitions WHERE competition_id = $2)
                THEN 'guarded' END AS why
),
