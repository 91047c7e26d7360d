-- Re-seals the digest of each closed period an erasure pseudonymised frozen rows of (migration
-- V13), after moderation_erase.sql in its transaction and under moderation_erase_seal_lock.sql:
-- the rows' lines with the erased id put back in place of the pseudonym must give the period's
-- seal (the close's digest, or the last re-seal's), which is recorded (prior_matches), and the
-- digest of the lines as they are now becomes the new seal. The erased id is used here and
-- stored nowhere. Whole periods are read (a hash per period, like verify): without the table
-- lock, so commands go on meanwhile.
-- $1 user id, $2 pseudonym, $3 the erasure's action id.
WITH touched AS (
    SELECT DISTINCT board_id, period FROM period_standings WHERE user_id = $2
),
sealed AS (
    SELECT t.board_id, t.period,
           coalesce((SELECT r.digest FROM period_reseals r
                     WHERE r.board_id = t.board_id AND r.period = t.period
                     ORDER BY r.id DESC LIMIT 1), c.digest) AS seal
    FROM touched t
    JOIN period_closes c ON c.board_id = t.board_id AND c.period = t.period
),
lines AS (
    SELECT s.board_id, s.period, s.seal,
           sha256(convert_to(string_agg(
               lb_standings_line(f.position, CASE WHEN f.user_id = $2 THEN $1 ELSE f.user_id END,
                                 f.score, f.tie, f.columns, f.col2, f.col3),
               E'\n' ORDER BY f.position), 'UTF8')) AS before,
           sha256(convert_to(string_agg(
               lb_standings_line(f.position, f.user_id, f.score, f.tie, f.columns, f.col2,
                                 f.col3),
               E'\n' ORDER BY f.position), 'UTF8')) AS after
    FROM sealed s
    JOIN period_standings f ON f.board_id = s.board_id AND f.period = s.period
    GROUP BY s.board_id, s.period, s.seal
),
resealed AS (
    INSERT INTO period_reseals (board_id, period, action_id, prior_matches, digest)
    SELECT board_id, period, $3, before = seal, after FROM lines
    RETURNING prior_matches
)
SELECT count(*) AS periods, count(*) FILTER (WHERE NOT prior_matches) AS mismatched
FROM resealed
