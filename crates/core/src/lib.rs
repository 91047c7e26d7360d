//! ledgerboard's core: domain types, the Redis key layout, configuration, and the PostgreSQL
//! and Redis access that the daemons and `lbctl` share.

pub mod auth;
pub mod backoff;
pub mod board;
pub mod cache;
pub mod config;
pub mod daemon;
pub mod db;
pub mod domain;
pub mod ids;
pub mod keys;
pub mod projection;
pub mod projection_read;
pub mod scripts;
pub mod shutdown;
pub mod telemetry;
