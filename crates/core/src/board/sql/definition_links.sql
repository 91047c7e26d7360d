-- What keeps a board's declared links from holding (board/definition/store.rs), after
-- definition_links_lock.sql: a board may feed boards that are declared, rank by the same
-- columns (names and orders; a board without columns by its sort), take the same value field
-- (a command carries a `delta` to add boards, a `score` to best and latest ones: one command
-- must be valid for all) and feed no board themselves; a board that is fed feeds none. So one
-- command reaches at most 8 boards and no link can loop (A feeding B while B feeds A would
-- make B fed and feeding).
-- $1 board id, $2 its feeds, $3 its columns (JSON text, NULL for none), $4 its sort, $5 its
-- operator.
-- One row: the feeds that are not declared, those with other columns, those taking the other
-- value field, those that feed boards themselves, and the boards that feed $1 (refused when $2
-- is not empty) with, among them, those whose columns or value field differ from $1's new
-- ones.
WITH shape AS (
    -- A board's columns as linked boards must share them.
    SELECT coalesce((SELECT jsonb_agg(jsonb_build_object('name', c -> 'name', 'order', c -> 'order'))
                     FROM jsonb_array_elements($3::jsonb) c),
                    jsonb_build_array(jsonb_build_object('order', $4::text))) AS mine
),
fed AS (
    SELECT f.board_id, d.board_id IS NOT NULL AS declared,
           coalesce((SELECT jsonb_agg(jsonb_build_object('name', c -> 'name', 'order', c -> 'order'))
                     FROM jsonb_array_elements(d.columns) c),
                    jsonb_build_array(jsonb_build_object('order', d.sort))) AS theirs,
           cardinality(d.feeds) > 0 AS feeding,
           (d.operator = 'add') <> ($5::text = 'add') AS other_value
    FROM unnest($2::text[]) AS f(board_id)
    LEFT JOIN board_definitions d ON d.board_id = f.board_id
),
feeders AS (
    SELECT d.board_id,
           coalesce((SELECT jsonb_agg(jsonb_build_object('name', c -> 'name', 'order', c -> 'order'))
                     FROM jsonb_array_elements(d.columns) c),
                    jsonb_build_array(jsonb_build_object('order', d.sort))) AS theirs,
           (d.operator = 'add') <> ($5::text = 'add') AS other_value
    FROM board_definitions d
    WHERE $1 = ANY (d.feeds) AND d.board_id <> $1
)
SELECT coalesce(array_agg(board_id ORDER BY board_id) FILTER (WHERE NOT declared), '{}') AS unknown,
       coalesce(array_agg(board_id ORDER BY board_id)
                FILTER (WHERE declared AND theirs <> (SELECT mine FROM shape)), '{}') AS other_columns,
       coalesce(array_agg(board_id ORDER BY board_id) FILTER (WHERE declared AND other_value),
                '{}') AS other_value,
       coalesce(array_agg(board_id ORDER BY board_id) FILTER (WHERE declared AND feeding), '{}') AS feeding,
       (SELECT coalesce(array_agg(board_id ORDER BY board_id), '{}') FROM feeders) AS fed_by,
       (SELECT coalesce(array_agg(board_id ORDER BY board_id), '{}') FROM feeders
        WHERE theirs <> (SELECT mine FROM shape)) AS fed_by_other_columns,
       (SELECT coalesce(array_agg(board_id ORDER BY board_id), '{}') FROM feeders
        WHERE other_value) AS fed_by_other_value
FROM fed
