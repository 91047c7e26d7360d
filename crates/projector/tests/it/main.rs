//! The projector crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod common;
mod failures;
mod lifecycle;
mod projection;
mod retention;
mod top_changed;
