//! Every SQL statement of the shared store code, kept in its own file under `db/sql/`.

pub const SCORE_COMMAND: &str = include_str!("sql/score_command.sql");
pub const SCHEMA_VERSION: &str = include_str!("sql/schema_version.sql");
pub const OUTBOX_STATUS: &str = include_str!("sql/outbox_status.sql");
pub const SCHEMA_HISTORY_EXISTS: &str = include_str!("sql/schema_history_exists.sql");
