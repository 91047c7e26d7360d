//! PostgreSQL access shared by the daemons and `lbctl`: the pool with its bounds, the
//! migrations and schema check, the score command, and status queries.
//!
//! Every call goes through one path: a [`Statement`] (SQL file under `db/sql/<what it
//! touches>/`, declared next to the function that runs it, with its parameter types and its
//! [`Op`]) run by [`Database::query`] and its siblings (pooled, bounded, timed) or by
//! [`Statements::query`] and its siblings on a transaction the caller holds (timed).

mod bounds;
mod errors;
pub mod group_queue;
pub mod history;
pub mod metrics;
mod migrations;
pub mod outbox;
pub mod pipeline;
mod pool;
pub mod reads;
pub mod row;
pub mod source;
pub mod statement;
mod status;
pub mod tls;
pub mod wakeup;

pub use errors::StoreError;
pub use metrics::{Op, timed};
pub use migrations::{
    Compatibility, MigrationReport, SchemaCheck, check_schema, known_schema_version, migrate,
};
pub use pool::{Database, wait_until_reachable};
pub use statement::{Params, Ready, Statement, StatementClient, Statements, commit};
pub use status::{OutboxStatus, STATUS, outbox_status};
