//! No code: this package holds the tests (`tests/`) that run `ledgerboard-api`,
//! `ledgerboard-projector` and `ledgerboard-reconciler` together as processes, the way they
//! are deployed. They find the binaries next to the test executables, so run them with
//! `cargo test --workspace` (which builds every binary first).
