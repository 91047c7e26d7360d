-- The event log (migration V20, docs/api.md "Events"): a moderation command's events, in its
-- transaction, once its action is written (moderation.rs; a repeat of the action id, a refusal
-- and an action that changed nothing write none). One event per declared board on which the
-- action changed an entry of the user (a removal: its one board; a ban, unban or erasure, which
-- reach every board: each board that held an entry, its periods and cohorts together), so that
-- a subscriber to a board hears of every change to it and a ban of a user on 50 daily periods
-- is one event of that board, not 50. Its id is derived from the action id and the board.
-- $1 action id, $2 kind (moderation.removed|banned|unbanned|erased), $3 the user as the audit
-- row records it (an erasure's pseudonym), $4 actor, $5 reason, $6 the boards it changed, as
-- stored (<board>, <board>~<period>, <board>~<period>~<cohort>).
WITH changed AS (
    SELECT split_part(b, '~', 1) AS board_id,
           count(*) AS entries,
           coalesce(array_agg(substr(b, strpos(b, '~') + 1) ORDER BY b)
                        FILTER (WHERE strpos(b, '~') > 0), '{}') AS periods
    FROM unnest($6::text[]) b
    GROUP BY 1
)
INSERT INTO event_queue (event_id, kind, board_id, user_id, payload)
SELECT lb_event_id($2 || ':' || $1::text || ':' || board_id), $2, board_id, $3,
       jsonb_build_object('action_id', $1, 'actor', $4, 'reason', $5, 'entries', entries,
                          'periods', periods)
FROM changed
