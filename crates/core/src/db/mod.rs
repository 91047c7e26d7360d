//! PostgreSQL access shared by the daemons and `lbctl`: the pool with its bounds, the
//! migrations and schema check, the score command, and status queries.

mod commands;
mod errors;
mod migrations;
pub mod outbox;
mod pool;
pub mod reads;
pub mod source;
pub mod sql;
pub mod statement;
mod status;
mod wakeup;

pub use commands::apply_score_command;
pub use errors::StoreError;
pub use migrations::{MigrationReport, SchemaCheck, check_schema, known_schema_version, migrate};
pub use pool::{Database, wait_until_reachable};
pub use statement::{StatementClient, Statements};
pub use status::{OutboxStatus, outbox_status};
