-- ledgerboard schema, version 14: boards with several columns, and boards that feed others
-- (issue 37).
--
-- Columns. A board may declare up to three columns, each with a name, an order (descending or
-- ascending) and its own bounds; a command carries one integer per column and the board ranks
-- by the whole tuple, column by column, each in its own order, then by its tie break. The
-- first column is the score every table already holds (`score`, `sort`, `min_score`,
-- `max_score` stay the first column's), so a board without columns is exactly what it was.
-- The second and third columns are stored as `col2` and `col3` in *order-key* form: the value
-- as submitted when the column's order is the first column's, negated when it is the other
-- (model/order.rs's `Columns`). One index order, `(score, col2, col3, tie, user_id)` greater
-- first, then serves every board: descending boards read it forward, ascending boards
-- backward, as before. Negation keeps a value within ±(2^53 - 1) there. Rows of a board
-- without columns hold 0 in both, so they order as they always did.
--
-- `columns` on each row says how many columns its board has (1 to 3), so that a row says by
-- itself how Redis spells its member (projection/member.rs), as `tie` already does: the
-- projector, the rebuild and the reconciler never need the board's definition to spell it.
--
-- Linked boards. A board may name the boards it feeds (`feeds`): one command to it applies
-- to each of them too, in the same transaction, under each board's own rule and period, with
-- one event id (board/link.rs). Each fed board's event is recorded under an id derived from
-- the command's (a UUID v5 of the board's name in the command's id), with the command's own id
-- in `source_event`.
--
-- Rolling upgrade: every column added here has a default (no table rewrite), and version 13's
-- statements keep working: they write one-column rows, and read through
-- user_scores_visible_order, which stays for this release. A board may be declared with
-- columns or feeds only once every api runs this release (version 13's api would take its
-- commands as one-column commands to one board): docs/operations.md.

ALTER TABLE board_definitions
    -- NULL: the board's one column is its score (every board before this version). Else a JSON
    -- array of 1 to 3 {"name", "order", "min", "max"}; the first is the score's (and equals
    -- sort, min_score and max_score, which stay for version 13). Checked by the api
    -- (board/definition/parse.rs); the CHECK only bounds its shape.
    ADD COLUMN columns jsonb
        CONSTRAINT board_definitions_columns CHECK (
            columns IS NULL OR (jsonb_typeof(columns) = 'array'
                                AND jsonb_array_length(columns) BETWEEN 1 AND 3)),
    -- The boards one command to this board also applies to (their ids, in the order declared).
    ADD COLUMN feeds text[] COLLATE "C" NOT NULL DEFAULT '{}'
        CONSTRAINT board_definitions_feeds CHECK (cardinality(feeds) <= 7);

ALTER TABLE user_scores
    ADD COLUMN columns smallint NOT NULL DEFAULT 1
        CONSTRAINT user_scores_columns CHECK (columns BETWEEN 1 AND 3),
    ADD COLUMN col2 bigint NOT NULL DEFAULT 0
        CONSTRAINT user_scores_col2_range CHECK (col2 BETWEEN -9007199254740991 AND 9007199254740991),
    ADD COLUMN col3 bigint NOT NULL DEFAULT 0
        CONSTRAINT user_scores_col3_range CHECK (col3 BETWEEN -9007199254740991 AND 9007199254740991);

-- The board's one order over visible entries, every column included: what every read of this
-- release walks and counts (index-only). It takes over from user_scores_visible_order (V6),
-- which stays for version 13's reads during a rolling upgrade; the next release drops it.
-- user_scores_order (V5), which no statement has used since V6, goes now, so a command still
-- writes two order indexes.
CREATE INDEX user_scores_visible_rank
    ON user_scores (board_id, score DESC, col2 DESC, col3 DESC, tie DESC, user_id DESC)
    WHERE NOT hidden;
DROP INDEX user_scores_order;

-- The absolute state an outbox row carries to the projection: every column.
ALTER TABLE leaderboard_outbox
    ADD COLUMN columns smallint NOT NULL DEFAULT 1,
    ADD COLUMN col2 bigint NOT NULL DEFAULT 0,
    ADD COLUMN col3 bigint NOT NULL DEFAULT 0;

-- What a command submitted in its other columns (order-key form; NULL past the board's
-- columns), for the idempotency comparison, and the tuple it produced, which a repeat answers
-- with. `source_event`: the event id the command was sent with, on the events of the boards it
-- fed (NULL on the board it was sent to).
ALTER TABLE score_events
    ADD COLUMN submitted2 bigint,
    ADD COLUMN submitted3 bigint,
    ADD COLUMN col2 bigint,
    ADD COLUMN col3 bigint,
    ADD COLUMN source_event uuid;

-- Frozen standings carry every column, and the close the columns it ranked by.
ALTER TABLE period_standings
    ADD COLUMN columns smallint NOT NULL DEFAULT 1,
    ADD COLUMN col2 bigint NOT NULL DEFAULT 0,
    ADD COLUMN col3 bigint NOT NULL DEFAULT 0;
ALTER TABLE period_closes ADD COLUMN columns jsonb;

-- One line of a period's digest with every column: a one-column board's line is V7's
-- (position, user, score, tie), so digests sealed before this version still verify; a board
-- with columns puts its other columns, in order-key form, between the score and the tie.
CREATE FUNCTION lb_standings_line(p_position bigint, p_user text, p_score bigint, p_tie bigint,
                                  p_columns smallint, p_col2 bigint, p_col3 bigint)
RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE p_columns
        WHEN 1 THEN lb_standings_line(p_position, p_user, p_score, p_tie)
        WHEN 2 THEN p_position || E'\t' || p_user || E'\t' || p_score || E'\t' || p_col2
                    || E'\t' || p_tie
        ELSE p_position || E'\t' || p_user || E'\t' || p_score || E'\t' || p_col2
             || E'\t' || p_col3 || E'\t' || p_tie
    END
$$;
