-- Declares or changes one board's definition in ONE statement, and refuses a change of the
-- board's rule (operator, sort, tie break, its columns' orders) while the board has entries:
-- they were applied under the old rule and are ordered by the old order, so changing it under
-- them would leave the board half in one rule and half in the other.
-- $1 board_id, $2 display_name, $3 operator, $4 sort, $5 tie_break, $6 min_score,
-- $7 max_score, $8 min_delta, $9 max_delta (both NULL on best and latest boards),
-- $10 the revision the caller read in this transaction (0: the board had no definition),
-- $11 reset, $12 time_zone (checked by the caller against pg_timezone_names), $13 columns
-- (JSON text, NULL for a board of one column), $14 feeds (checked by the caller,
-- definition_links.sql), $15 write_policy (server or player), $16 attempts and $17 review
-- (JSON text or NULL, board/definition/rules.rs). A column's name and bounds may change under entries; the number of
-- columns and their orders may not. Feeds may change at any time: the revision a command
-- carries covers them.
--
-- The reset and the time zone are part of the rule too: a board's entries live in the periods
-- its schedule cut (or in the board itself when it never reset), so a new schedule under
-- entries would leave them in periods that no read names any more. Its periods' entries count
-- (`<board>~<period>` ids, found by a prefix range on the primary key).
--
-- Runs in board/definition/store.rs's transaction. When the rule changes, the caller has taken
-- `LOCK TABLE user_scores IN SHARE MODE` first (definition_lock_entries.sql): no command can
-- add an entry until the commit, and this statement's snapshot, taken after the lock, sees
-- every entry committed before it. The check and the write are then exact.
--
-- The caller's revision guards everything else: a definition written since the caller read it
-- (by another definer, perhaps of another rule and without the table lock) makes the upsert
-- write nothing (the DO UPDATE's WHERE sees the newest row version, the INSERT conflicts), so
-- `written` is empty, revision comes back NULL, and the caller reads again and retries.
-- Nothing is ever deleted from board_definitions, so a row that existed still exists.
WITH current AS (
    SELECT operator, sort, tie_break, reset, time_zone,
           jsonb_path_query_array(columns, '$[*].order') AS orders
    FROM board_definitions
    WHERE board_id = $1
),
refusal AS (
    -- An undeclared board follows the implicit rule (board/definition/types.rs's `implicit`).
    SELECT (coalesce((SELECT operator FROM current), 'add'),
            coalesce((SELECT sort FROM current), 'descending'),
            coalesce((SELECT tie_break FROM current), 'user_id'),
            coalesce((SELECT reset FROM current), 'never'),
            coalesce((SELECT time_zone FROM current), 'UTC'),
            (SELECT orders FROM current))
           IS DISTINCT FROM ($3, $4, $5, $11, $12,
                             jsonb_path_query_array($13::jsonb, '$[*].order'))
       -- The primary key (board_id, user_id) answers both from their first entry: the board's
       -- own, and its periods' ('~' sorts after every identifier character).
       AND (EXISTS (SELECT 1 FROM user_scores WHERE board_id = $1)
            OR EXISTS (SELECT 1 FROM user_scores
                       WHERE board_id > $1 || '~' AND board_id < $1 || '~~')) AS has_entries
),
written AS (
    INSERT INTO board_definitions AS d
        (board_id, display_name, operator, sort, tie_break,
         min_score, max_score, min_delta, max_delta, reset, time_zone, columns, feeds,
         write_policy, attempts, review)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $12, $13::jsonb, $14, $15, $16::jsonb,
           $17::jsonb
    FROM refusal
    WHERE NOT has_entries
    ON CONFLICT (board_id) DO UPDATE
        SET display_name = EXCLUDED.display_name,
            operator = EXCLUDED.operator,
            sort = EXCLUDED.sort,
            tie_break = EXCLUDED.tie_break,
            min_score = EXCLUDED.min_score,
            max_score = EXCLUDED.max_score,
            min_delta = EXCLUDED.min_delta,
            max_delta = EXCLUDED.max_delta,
            reset = EXCLUDED.reset,
            time_zone = EXCLUDED.time_zone,
            columns = EXCLUDED.columns,
            feeds = EXCLUDED.feeds,
            write_policy = EXCLUDED.write_policy,
            attempts = EXCLUDED.attempts,
            review = EXCLUDED.review,
            -- A command carries the revision it was validated against; its statement refuses
            -- to run under another one, so the change applies to every later command.
            revision = d.revision + 1,
            updated_at = now()
        WHERE d.revision = $10
    RETURNING display_name, operator, sort, tie_break, min_score, max_score,
              min_delta, max_delta, reset, time_zone, columns::text AS columns, feeds,
              write_policy, attempts::text AS attempts, review::text AS review, revision
)
SELECT r.has_entries, w.*
FROM refusal r
LEFT JOIN written w ON true
