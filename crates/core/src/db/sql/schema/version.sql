-- The newest migration applied (refinery's history table).
SELECT max(version) AS version FROM refinery_schema_history
