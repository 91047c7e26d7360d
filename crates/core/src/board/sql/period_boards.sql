-- Declared boards that reset, in byte order, at most $1: the reconciler seals each one's next
-- period before it starts (reconciler/periods.rs). board_definitions holds one row per declared
-- board.
-- $1 how many at most.
SELECT board_id FROM board_definitions
WHERE reset <> 'never'
ORDER BY board_id
LIMIT $1
