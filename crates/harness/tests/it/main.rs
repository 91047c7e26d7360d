//! The harness crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod browser;
mod cluster;

/// The two tests start heavy servers (a six-node Redis Cluster that fails over; chromium): one
/// at a time, as when each was a binary of its own, so that the cluster's 30 s settle never
/// meets a browser's load on two cores (after 4: "the cluster did not settle in 30s").
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds [`ONE_AT_A_TIME`] for the caller's test; a test that panicked while holding it does not
/// stop the other from running.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
