//! `ledgerboard-projector`: applies the outbox to the Redis projection. Any number of
//! replicas may run; `FOR UPDATE SKIP LOCKED` (or leases) share the rows between them and the
//! projection script makes every repeat harmless.

pub mod metrics;
pub mod redis_guard;
pub mod settings;
pub mod wakeup;
// Public only for the tests that drive single batches (feature `test-hooks`).
#[cfg(feature = "test-hooks")]
pub mod worker;
#[cfg(not(feature = "test-hooks"))]
mod worker;

use std::sync::Arc;
use std::time::Duration;

use ledgerboard_core::config::{self, Holds};
use ledgerboard_core::db::Database;
use ledgerboard_core::db::outbox;
use ledgerboard_core::projection::Store;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::metrics::Counters;
use crate::settings::{Sections, Settings, UnsafeRedisAction};
use crate::worker::Worker;

#[derive(Debug, thiserror::Error)]
pub enum ProjectorError {
    #[error("refusing to start: {0} (projector.unsafe_redis = refuse)")]
    UnsafeRedis(String),
}

pub struct Projector {
    settings: Arc<Settings>,
    db: Database,
    store: Store,
    counters: Arc<Counters>,
    instance: String,
}

impl Projector {
    /// `settings` may hold other daemons' sections too (tests running several in one process).
    pub fn new<D: Holds<Sections>>(
        settings: config::Settings<D>,
        db: Database,
        store: Store,
    ) -> Self {
        // The pod's name (HOSTNAME): leases then say which pod holds a row.
        let instance = ledgerboard_core::ids::instance_id("projector");
        Self {
            settings: Arc::new(settings.narrow()),
            db,
            store,
            counters: Counters::register(),
            instance,
        }
    }

    /// What this projector did: the counters its exported metrics are made of.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// A worker of this projector: tests drive single batches with it ([`Worker::batch`]).
    #[cfg(feature = "test-hooks")]
    pub fn worker(&self, index: usize) -> Worker {
        self.new_worker(index)
    }

    fn new_worker(&self, index: usize) -> Worker {
        Worker {
            db: self.db.clone(),
            store: self.store.clone(),
            settings: self.settings.clone(),
            counters: self.counters.clone(),
            owner: format!("{}-{index}", self.instance),
        }
    }

    /// Reports Redis settings that can lose projected keys; refuses to start on them when
    /// `projector.unsafe_redis = refuse`. A Redis that does not answer yet, or hides CONFIG,
    /// is only reported: the workers wait for it.
    pub async fn check_redis(&self) -> Result<(), ProjectorError> {
        let p = &self.settings.projector;
        match redis_guard::inspect(&self.store).await {
            Ok(memory) => {
                let problems = redis_guard::problems_of_all(&memory, p.redis_memory_warn_ratio);
                if !problems.is_empty() && p.unsafe_redis == UnsafeRedisAction::Refuse {
                    return Err(ProjectorError::UnsafeRedis(problems.join("; ")));
                }
                for problem in problems {
                    tracing::warn!(
                        problem,
                        "Redis is configured so that the projection can lose data"
                    );
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot read Redis's memory settings"),
        }
        Ok(())
    }

    /// Runs the workers, the retention task and the Redis check until `cancel` fires, then
    /// waits for them for at most the shutdown grace (plus a second).
    pub async fn run(self, cancel: CancellationToken) {
        let p = &self.settings.projector;
        let (wake, listener) = wakeup::spawn(&self.settings.database, cancel.clone());
        let mut tasks = JoinSet::new();
        for index in 0..p.workers.get() {
            tasks.spawn(self.new_worker(index).run(cancel.clone(), wake.clone()));
        }
        tasks.spawn(retention_loop(
            self.db.clone(),
            self.settings.clone(),
            cancel.clone(),
        ));
        tasks.spawn(redis_check_loop(
            self.store.clone(),
            self.settings.clone(),
            cancel.clone(),
        ));

        cancel.cancelled().await;
        let limit = self.settings.shutdown.grace() + Duration::from_secs(1);
        let joined =
            tokio::time::timeout(limit, async { while tasks.join_next().await.is_some() {} }).await;
        if joined.is_err() {
            tracing::warn!(
                ?limit,
                "tasks still running after the shutdown grace; abandoning them"
            );
            tasks.abort_all();
        }
        listener.abort();
    }
}

async fn retention_loop(db: Database, settings: Arc<Settings>, cancel: CancellationToken) {
    let p = &settings.projector;
    let published = (p.published_retention_ms.ms() > 0).then(|| p.published_retention_ms.get());
    let events = (p.event_retention_ms.ms() > 0).then(|| p.event_retention_ms.get());
    if published.is_none() && events.is_none() {
        return;
    }
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(p.retention_interval()) => {}
        }
        let pass = outbox::retention_pass(&db, published, events, p.retention_batch.get(), 100);
        let result = tokio::select! {
            _ = cancel.cancelled() => return,
            result = pass => result,
        };
        match result {
            Ok(r) if r.outbox_deleted + r.events_deleted > 0 => tracing::info!(
                outbox_deleted = r.outbox_deleted,
                events_deleted = r.events_deleted,
                "retention"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "retention pass failed; next interval retries"),
        }
    }
}

async fn redis_check_loop(store: Store, settings: Arc<Settings>, cancel: CancellationToken) {
    let p = &settings.projector;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(p.redis_check_interval()) => {}
        }
        match redis_guard::inspect(&store).await {
            Ok(memory) => {
                for problem in redis_guard::problems_of_all(&memory, p.redis_memory_warn_ratio) {
                    tracing::warn!(
                        problem,
                        "Redis is configured so that the projection can lose data"
                    );
                }
            }
            Err(e) => tracing::debug!(error = %e, "cannot read Redis's memory settings"),
        }
    }
}
