-- Freezes every board of a run in one statement, each exactly as a period's close freezes a
-- period (board/sql/period_close.sql: the same order, ranks, lines and digest, so `period
-- verify` and the run's verify read them alike): the run's period board when the competition
-- has no cohorts, else each of its cohorts (an empty cohort too: 0 entries). Keyed in
-- period_standings and period_closes by the competition and the board's period key (<period>
-- or <period>~<cohort>). A board closed already (the reconciler's period close, or an earlier
-- try of this one) is left as it is. Runs in the close's second transaction, after the first
-- held the board's period lock, so every command of the run has committed.
-- $1 competition id, $2 run (period id), $3 sort, $4 tie break, $5 the board's columns (JSON
-- text, NULL for one column).
WITH keys AS MATERIALIZED (
    SELECT $2 || coalesce('~' || lpad(k.cohort::text, 6, '0'), '') AS period
    FROM (
        SELECT cohort FROM competition_cohorts WHERE competition_id = $1 AND run = $2
        UNION ALL
        SELECT NULL FROM competitions
        WHERE competition_id = $1 AND cohort_size IS NULL
    ) k
),
boards AS MATERIALIZED (
    SELECT k.period, $1 || '~' || k.period AS board_id
    FROM keys k
    WHERE NOT EXISTS (SELECT 1 FROM period_closes c WHERE c.board_id = $1 AND c.period = k.period)
),
ranked AS MATERIALIZED (
    SELECT b.period, s.user_id, s.score, s.columns, s.col2, s.col3, s.tie, s.version,
           s.metadata,
           row_number() OVER (PARTITION BY b.period
                              ORDER BY CASE WHEN $3 = 'ascending' THEN s.score END,
                                       CASE WHEN $3 = 'ascending' THEN s.col2 END,
                                       CASE WHEN $3 = 'ascending' THEN s.col3 END,
                                       CASE WHEN $3 = 'ascending' THEN s.tie END,
                                       CASE WHEN $3 = 'ascending' THEN s.user_id END,
                                       s.score DESC, s.col2 DESC, s.col3 DESC, s.tie DESC,
                                       s.user_id DESC) AS position,
           rank() OVER (PARTITION BY b.period
                        ORDER BY CASE WHEN $3 = 'ascending' THEN s.score END,
                                 CASE WHEN $3 = 'ascending' THEN s.col2 END,
                                 CASE WHEN $3 = 'ascending' THEN s.col3 END,
                                 s.score DESC, s.col2 DESC, s.col3 DESC) AS rank,
           dense_rank() OVER (PARTITION BY b.period
                              ORDER BY CASE WHEN $3 = 'ascending' THEN s.score END,
                                       CASE WHEN $3 = 'ascending' THEN s.col2 END,
                                       CASE WHEN $3 = 'ascending' THEN s.col3 END,
                                       s.score DESC, s.col2 DESC, s.col3 DESC) AS dense
    FROM boards b
    JOIN user_scores s ON s.board_id = b.board_id AND NOT s.hidden
),
standings AS (
    INSERT INTO period_standings
        (board_id, period, position, rank, dense, user_id, score, columns, col2, col3, tie,
         version, metadata)
    SELECT $1, period, position, rank, dense, user_id, score, columns, col2, col3, tie, version,
           metadata
    FROM ranked
),
lines AS (
    SELECT period, count(*) AS entries,
           string_agg(lb_standings_line(position, user_id, score, tie, columns, col2, col3),
                      E'\n' ORDER BY position) AS lines
    FROM ranked
    GROUP BY period
),
closed AS (
    -- closed_at after the snapshot, as period_close.sql says why.
    INSERT INTO period_closes
        (board_id, period, sort, tie_break, entries, digest, closed_at, columns)
    SELECT $1, b.period, $3, $4, coalesce(l.entries, 0),
           sha256(convert_to(coalesce(l.lines, ''), 'UTF8')), clock_timestamp(), $5::jsonb
    FROM boards b LEFT JOIN lines l ON l.period = b.period
    RETURNING period, closed_at, entries, digest
),
-- One `period.closed` per board frozen here (the run's board, or each cohort: its period key
-- <period>~<cohort> names the cohort), exactly as period_close.sql writes it (the same id: a
-- board the reconciler's period close froze first is not frozen here, and writes nothing).
logged AS (
    INSERT INTO event_queue (event_id, kind, board_id, target, payload)
    SELECT lb_event_id('period.closed:' || $1 || ':' || c.period), 'period.closed', $1,
           $1 || '~' || c.period,
           jsonb_strip_nulls(jsonb_build_object(
               'period', $2,
               'cohort', CASE WHEN c.period <> $2 THEN split_part(c.period, '~', 2)::integer END,
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
                   FROM ranked r
                   WHERE r.period = c.period AND r.position <= lb_event_first()), '[]'::jsonb)))
    FROM closed c
)
SELECT count(*) AS boards FROM closed
