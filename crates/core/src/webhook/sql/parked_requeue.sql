-- Requeues one subscription's parked deliveries (those at positions $2; empty: all that are not
-- requeued already): the dispatcher delivers each once more.
UPDATE webhook_parked
SET requeued_at = now()
WHERE subscription_id = $1 AND requeued_at IS NULL
  AND (cardinality($2::bigint[]) = 0 OR position = ANY ($2))
