//! The dispatcher crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod addresses;
mod circuit;
mod common;
mod crash;
mod delivery;
mod https;
mod parking;
mod postgres_restart;
mod signature;
