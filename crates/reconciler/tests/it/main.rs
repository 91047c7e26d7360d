//! The reconciler crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod cluster;
mod common;
mod earliest;
mod lifecycle;
mod many_boards;
mod moderation;
mod once;
mod periods_ahead;
mod progress;
mod reconcile;
mod recovery;
mod requests;
