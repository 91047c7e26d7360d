-- Whether any migration was ever applied (refinery creates its history table on first run).
SELECT to_regclass('refinery_schema_history') IS NOT NULL
