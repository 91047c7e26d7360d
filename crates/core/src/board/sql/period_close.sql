-- Freezes a period's final standings, in the close's second transaction, after the first one
-- held the period lock (so every command of the period has committed, and this statement's
-- snapshot, taken after it, sees them all): the visible entries ranked in the board's order,
-- numbered (position) and ranked by their tuple (score and other columns: competition and
-- dense, as the reads' rank modes), and one row with their count, the SHA-256 of their lines
-- and the columns they were ranked by. Writes nothing when the period is closed already (a
-- second close, or a concurrent one that committed first): closing twice writes once.
-- $1 board id, $2 period id, $3 sort (ascending|descending), $4 tie break, $5 the board's
-- columns (JSON text as board_definitions holds them; NULL for a board of one column).
--
-- The order: descending boards put the greater (score, col2, col3, tie, user id) first,
-- ascending boards the smaller (model/order.rs's Order: the other columns are stored in the
-- board's direction); on a descending board the ascending keys are all NULL and the descending
-- ones decide, and the other way round.
WITH open AS (
    SELECT 1 AS open
    WHERE NOT EXISTS (SELECT 1 FROM period_closes WHERE board_id = $1 AND period = $2)
),
ranked AS MATERIALIZED (
    SELECT user_id, score, columns, col2, col3, tie, version, metadata,
           row_number() OVER (ORDER BY CASE WHEN $3 = 'ascending' THEN score END,
                                       CASE WHEN $3 = 'ascending' THEN col2 END,
                                       CASE WHEN $3 = 'ascending' THEN col3 END,
                                       CASE WHEN $3 = 'ascending' THEN tie END,
                                       CASE WHEN $3 = 'ascending' THEN user_id END,
                                       score DESC, col2 DESC, col3 DESC, tie DESC,
                                       user_id DESC) AS position,
           rank() OVER (ORDER BY CASE WHEN $3 = 'ascending' THEN score END,
                                 CASE WHEN $3 = 'ascending' THEN col2 END,
                                 CASE WHEN $3 = 'ascending' THEN col3 END,
                                 score DESC, col2 DESC, col3 DESC) AS rank,
           dense_rank() OVER (ORDER BY CASE WHEN $3 = 'ascending' THEN score END,
                                       CASE WHEN $3 = 'ascending' THEN col2 END,
                                       CASE WHEN $3 = 'ascending' THEN col3 END,
                                       score DESC, col2 DESC, col3 DESC) AS dense
    FROM user_scores
    WHERE board_id = $1 || '~' || $2 AND NOT hidden AND EXISTS (SELECT 1 FROM open)
),
standings AS (
    INSERT INTO period_standings
        (board_id, period, position, rank, dense, user_id, score, columns, col2, col3, tie,
         version, metadata)
    SELECT $1, $2, position, rank, dense, user_id, score, columns, col2, col3, tie, version,
           metadata
    FROM ranked
),
closed AS (
    -- closed_at: the clock during this statement, so after its snapshot (not the
    -- transaction's start, before it): a moderation that committed before the snapshot, so
    -- shaped these standings, carries an earlier time (moderation_result.sql), and one that
    -- did not is either later or, re-versioning no frozen row, changes nothing verify judges.
    INSERT INTO period_closes
        (board_id, period, sort, tie_break, entries, digest, closed_at, columns)
    SELECT $1, $2, $3, $4, (SELECT count(*) FROM ranked),
           sha256(convert_to(coalesce(
               (SELECT string_agg(lb_standings_line(position, user_id, score, tie, columns, col2,
                                                    col3), E'\n'
                                  ORDER BY position)
                FROM ranked), ''), 'UTF8')),
           clock_timestamp(), $5::jsonb
    FROM open
    RETURNING closed_at, entries, digest
),
-- The event log (migration V20, docs/api.md "Events"): one `period.closed`, written only by the
-- close that froze the standings (a second close writes no close row, so no event), with its
-- id derived from the period (lb_event_id): the first standings (lb_event_first) and the
-- digest, as GET …/periods/{period}/standings shows them.
logged AS (
    INSERT INTO event_queue (event_id, kind, board_id, target, payload)
    SELECT lb_event_id('period.closed:' || $1 || ':' || $2), 'period.closed', $1,
           $1 || '~' || $2,
           jsonb_build_object(
               'period', $2,
               'closed_at', to_char(c.closed_at AT TIME ZONE 'UTC',
                                    'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
               'entries', c.entries,
               'digest', encode(c.digest, 'hex'),
               'standings', coalesce((
                   SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                              'position', r.position, 'rank', r.rank, 'user_id', r.user_id,
                              'score', r.score,
                              'scores', lb_event_scores($5::jsonb, r.score, r.col2, r.col3)))
                          ORDER BY r.position)
                   FROM ranked r WHERE r.position <= lb_event_first()), '[]'::jsonb))
    FROM closed c
)
SELECT count(*) > 0 AS written FROM closed
