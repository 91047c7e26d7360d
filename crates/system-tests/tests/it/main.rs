//! The system-tests crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod cluster;
mod console;
mod contract;
mod fuzz;
mod sdks;
mod telemetry;
mod upgrade;
