-- Whether a stored board id is an archived period (migration V8).
-- $1 stored board id.
SELECT lb_period_archived($1) AS archived
