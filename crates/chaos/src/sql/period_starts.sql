-- The start of each period id (its start in UTC to the second, `YYYYMMDDTHHMMSSZ`), in seconds
-- since the Unix epoch, read as period_verify.sql reads one: the chaos check holds each command
-- to the period its answer named by these starts. $1 period ids.
SELECT p, extract(epoch FROM to_timestamp(p, 'YYYYMMDD"T"HH24MISS"Z"')::timestamp
                             AT TIME ZONE 'UTC')::bigint AS starts
FROM unnest($1::text[]) AS p
