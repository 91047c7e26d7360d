//! What the projector's tests share: a test environment with the projector's settings, and a
//! running projector on it.

#![allow(dead_code)] // each test file uses its own part

use std::sync::Arc;

use ledgerboard_projector::Projector;
use ledgerboard_projector::metrics::Counters;
use ledgerboard_projector::settings::Sections;
use tokio_util::sync::CancellationToken;

/// The projector's settings in a test environment of its own.
pub type TestEnv = ledgerboard_testkit::TestEnv<Sections>;

/// A running projector with its own pools, like one replica: its counters and its task.
pub fn start_replica(
    env: &TestEnv,
    cancel: &CancellationToken,
) -> (Arc<Counters>, tokio::task::JoinHandle<()>) {
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let counters = projector.counters();
    let handle = tokio::spawn(projector.run(cancel.clone()));
    (counters, handle)
}
