-- The re-read of the members of a chunk that were not current at the reconciler's first look
-- ($2 user ids of board $1), made after Redis was read again: each member's source row, and
-- whether the outbox row of that very version is still pending (neither published nor parked).
-- Both come from one statement, so from one snapshot: the command that wrote the version wrote
-- its outbox row in the same transaction, so a pending row means the projector has yet to write
-- that version to Redis, and a published one means it wrote it before this statement ran.
-- The EXISTS is one probe of leaderboard_outbox_pending_member (V4) per member: that index
-- holds only pending rows, so the cost does not grow with the outbox's backlog or history.
SELECT s.user_id, s.score, s.version, s.columns, s.col2, s.col3, s.tie, s.metadata::text AS metadata,
       EXISTS (SELECT 1 FROM leaderboard_outbox o
               WHERE o.board_id = s.board_id
                 AND o.user_id = s.user_id
                 AND o.score_version = s.version
                 AND o.published_at IS NULL
                 AND o.parked_at IS NULL) AS pending
FROM user_scores s
WHERE s.board_id = $1 AND NOT s.hidden AND s.user_id = ANY ($2::text[])
