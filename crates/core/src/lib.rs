//! ledgerboard's core: domain types, configuration, the PostgreSQL access and the Redis read
//! model (`projection/`) that the daemons and `lbctl` share.

pub mod auth;
pub mod backoff;
pub mod board;
pub mod competition;
pub mod config;
pub mod daemon;
pub mod db;
pub mod events;
pub mod ids;
pub mod model;
pub mod projection;
pub mod ranking;
pub mod shutdown;
pub mod telemetry;
pub mod tls;
pub mod webhook;
