//! The Redis read model: PostgreSQL holds the truth, and this module is everything that
//! writes, reads or looks at its projection in Redis.
//!
//! - `store.rs`: the connections ([`Store`]), each call timed (`metrics.rs`); `cluster.rs`
//!   for Redis Cluster mode.
//! - `keys.rs`: the key layout, the one place that builds key names; `member.rs`: how a
//!   member is spelt so that Redis orders a board as the database does.
//! - `scripts.rs` and `lua/`: the Lua scripts, embedded at build time, and how they are sent.
//! - `apply.rs`: the projector's batch of outbox rows; `top.rs`: each board's first N read in
//!   the same round trip (`rank.top_changed`).
//! - `live.rs`: the channel each projection call publishes its board's change on, and the
//!   board's change sequence (the api's live updates).
//! - `read.rs`: the api's leaderboard reads, each with the board's seal.
//! - `inspect.rs`: what the reconciler, the tests and the chaos check observe and repair.
//! - `generation.rs`: a rebuild's new generation of a board, its switch and its seal.
//! - `lock.rs`: the single-reconciler lock's Redis calls.

pub mod apply;
pub mod classify;
mod cluster;
pub mod generation;
pub mod inspect;
pub mod keys;
pub mod live;
pub mod lock;
pub mod member;
mod metrics;
pub mod read;
mod reply;
pub mod scripts;
mod store;
mod tls;
pub mod top;

pub use apply::{
    Applied, Outage, RowOutcome, apply_batch, apply_batch_with_tops, is_outage, request_rebuild,
    request_rebuilds,
};
pub use cluster::ClusterLink;
pub use keys::{KeyLayout, cluster_slot};
pub use read::{Seal, Sealed};
pub use store::{ReadModelError, Store, TimedConnection};
