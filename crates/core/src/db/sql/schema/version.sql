-- The newest migration applied (refinery's history table), and how many applied migrations
-- are newer than $1, the newest this binary embeds: refinery numbers them freely (gaps are
-- allowed), so "the next release's schema" is counted in migrations, not in version numbers.
SELECT max(version) AS version,
       count(*) FILTER (WHERE version > $1)::int4 AS ahead
  FROM refinery_schema_history
