-- Changes a subscription: each of url ($2), kinds ($3), boards ($4), enabled ($5) that is not
-- NULL replaces the stored value. A new URL, or a subscription enabled again, is a receiver
-- to try afresh: its failure count and circuit are reset and its lanes are due now with no
-- attempts charged (the lanes keep their positions: a change skips nothing and repeats
-- nothing).
WITH old AS (
    SELECT subscription_id, url, enabled
    FROM webhook_subscriptions
    WHERE subscription_id = $1
    FOR UPDATE
),
fresh AS (
    SELECT subscription_id,
           (coalesce($2, url) <> url OR (coalesce($5, enabled) AND NOT enabled)) AS afresh
    FROM old
),
sub AS (
    UPDATE webhook_subscriptions s
    SET url = coalesce($2, s.url),
        kinds = coalesce($3, s.kinds),
        boards = coalesce($4, s.boards),
        enabled = coalesce($5, s.enabled),
        failures = CASE WHEN fresh.afresh THEN 0 ELSE s.failures END,
        circuit_open_until = CASE WHEN fresh.afresh THEN NULL ELSE s.circuit_open_until END,
        updated_at = now()
    FROM fresh
    WHERE s.subscription_id = fresh.subscription_id
    RETURNING s.*
),
due AS (
    UPDATE webhook_lanes l SET next_attempt_at = now(), attempts = 0
    FROM fresh
    WHERE fresh.afresh AND l.subscription_id = fresh.subscription_id
)
SELECT subscription_id, url, kinds, boards, lanes, enabled, start_position, failures,
       CASE WHEN circuit_open_until IS NULL THEN 'closed'
            WHEN circuit_open_until > now() THEN 'open' ELSE 'half_open' END AS circuit,
       to_char(circuit_open_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS circuit_open_until,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
       to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
FROM sub
