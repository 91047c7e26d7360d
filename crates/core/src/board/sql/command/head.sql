-- Applies one score command in ONE statement (one round trip, one implicit transaction):
-- this head, the guards (guards.sql, or unguarded.sql for a command that has no attempt on a
-- board not known to be a competition), hold.sql, the operator's part (add.sql, best.sql,
-- latest.sql: its rule) and tail.sql, put together at compile time (board/operator.rs).
-- $1 event_id uuid, $2 board_id text, $3 user_id text, $4 the value bigint (add: the delta,
-- already within the board's delta bounds; best and latest: the submitted score, already
-- within the board's score bounds), $5 traceparent text (the request's W3C trace context, or
-- NULL), $6 the definition revision the command was validated against (0: undeclared),
-- $7 tie sign (0 on boards whose ties go by user id; -1 descending, +1 ascending earliest),
-- $8 min score, $9 max score, $10 metadata (JSON text, or NULL), $11 direction: 1 on
-- descending boards (greater is better), -1 on ascending ones, $12 the board's number of
-- columns (1 to 3, migration V14), $13 and $14 the second and third columns' values (add:
-- their deltas) in order-key form (model/order.rs: negated where the column orders the other
-- way from the first, so the tuple (score, col2, col3) compares in the board's direction), 0
-- past the board's columns, $15 and $16 the second column's bounds, $17 and $18 the third's
-- (order-key form; 0 and 0 past the board's columns), $19 the event id the command was sent
-- with, on the command of a board it fed (board/link.rs; NULL on the board it was sent to),
-- $20 the attempt the command comes from (migration V16; NULL: none, as on every fed board's).
-- Every operator's statement takes the same parameters and answers the same columns.
--
-- Attempts (issue 38): a command with one goes ahead only when its attempt allows it
-- (`attempt_verdict`), and marks it used by its event id (tail.sql's `attempt_used`) when its
-- event is recorded; a refusal is one row naming it ('attempt_used', …), nothing written. The
-- answer's last two columns say what the caller checks: the event id that used the attempt (a
-- repeat must carry the attempt its first run used) and how long a too fast one has to go.
--
-- First arrival: `prior` is empty and the board's definition still has revision $6, so the
-- command goes ahead (`go`): the part upserts the score (the row lock serializes concurrent
-- commands for one user: no lost update) and says what the event records (`written`), the
-- event is recorded with the score and version it produced, and the outbox row carries them
-- (tie and metadata too) to the projection. A command that went ahead and wrote nothing is
-- answered with the operator's refusal (`rule.refusal`).
-- Earliest boards: a member whose tuple changes draws its tie from user_scores_reached_seq.
-- The draw happens once per statement in `go` and is only kept when the score changes (gaps
-- are harmless).
-- It does not NOTIFY: db/wakeup.rs wakes the projectors after the commit (see outbox/wakeup.sql).
-- Repeat: `prior` returns the recorded event and nothing is written. Another revision: one
-- row saying so ('stale_definition'), nothing written; the caller reloads the definition.
-- Moderation (V6, board/moderation.rs): a new entry of a banned user is written hidden and its
-- outbox row asks the projection to hide it ('hide': a tombstone at its version); an entry
-- hidden or not keeps its flag on update (a ban or an unban changes it, under a table lock). A
-- new entry continues the version of a removed one (removed_entries), so it outranks the
-- removal's tombstone in Redis, and starts above the board's last erasure
-- (erased_version_floors, V12), so a returning user outranks the erasure's row. Every part's
-- upsert does the same.
-- Concurrent arrivals of one new event id: the later one's insert into score_events raises
-- unique_violation on score_events_pkey, which aborts its whole statement; the caller retries.
--
-- The part closes `go` (its condition may add to the one here) and defines
--   rule (operator, refusal): the operator's name as score_events and the answer spell it, and
--     the outcome of a command that went ahead and wrote nothing (NULL: it always writes);
--   upserted (board_id, score, col2, col3, version, tie, metadata, hidden): the user_scores
--     row written;
--   written (board_id, score, col2, col3, version, improved, delta): what the event records.
WITH prior AS (
    SELECT board_id, user_id, coalesce(operator, 'add') AS operator,
           coalesce(submitted, delta) AS submitted, submitted2, submitted3,
           metadata::text AS metadata, score, col2, col3, version, improved
    FROM score_events
    WHERE event_id = $1
),
definition AS (
    SELECT coalesce((SELECT revision FROM board_definitions WHERE board_id = $2), 0) = $6
        AS current
),
period AS (
    -- The board the command writes: $2 itself, or the period of $2 open now (migration V7's
    -- lb_command_board, board/sql/functions/: it reads the clock under the board's period
    -- lock). Only a command that may go ahead asks, so a repeat or one validated against
    -- another revision never waits for a close.
    -- A competition with cohorts (migration V18): the player's cohort of that period (its run),
    -- `<board>~<period>~<cohort>`, by the player's entry; `run` is the period's board either
    -- way (what an attempt is bound to) and `run_id` the period id.
    SELECT r.board_id AS run, substr(r.board_id, length($2) + 2) AS run_id,
           r.board_id || coalesce((
               SELECT '~' || lpad(e.cohort::text, 6, '0') FROM competition_entries e
               WHERE e.competition_id = $2 AND e.run = substr(r.board_id, length($2) + 2)
                 AND e.user_id = $3 AND e.cohort IS NOT NULL), '') AS board_id
    FROM (SELECT lb_command_board($2) AS board_id
          WHERE NOT EXISTS (SELECT 1 FROM prior) AND (SELECT current FROM definition)) r
),
