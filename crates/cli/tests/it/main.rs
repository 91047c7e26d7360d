//! The cli crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod common;
mod lbctl;
mod period_verify;
