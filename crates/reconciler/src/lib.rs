//! `ledgerboard-reconciler`: compares the Redis projection (observed) with PostgreSQL
//! (intent), classifies every member as missing, stale, ahead, corrupt, current, lagging or orphan,
//! and repairs the drift, with one replica at work at a time (a Redis lock).

// The verdict moved to core (the console gives it too); the old path still names it.
pub use ledgerboard_core::projection::classify;
pub mod lock;
pub mod metrics;
pub mod pass;
pub mod periods;
pub mod rebuild;
pub mod report;
pub mod requests;
pub mod settings;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ledgerboard_core::board::guard::{attempt, review};
use ledgerboard_core::board::periods as core_periods;
use ledgerboard_core::competition;
use ledgerboard_core::config::{self, Holds};
use ledgerboard_core::db::{Database, history};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::generation::{self, RequestKind};
use ledgerboard_core::projection::{ReadModelError, Store, inspect};
use tokio_util::sync::CancellationToken;

use crate::pass::{PassOptions, run_pass};
use crate::report::PassReport;
use crate::settings::{Sections, Settings};

#[derive(Debug, thiserror::Error)]
pub enum ReconcilerError {
    #[error("another reconciler holds the lock; try again when its pass is done")]
    Busy,
    #[error(transparent)]
    Redis(#[from] ReadModelError),
}

pub struct Reconciler {
    settings: Arc<Settings>,
    db: Database,
    store: Store,
    lock_held: Arc<AtomicBool>,
}

impl Reconciler {
    /// `settings` may hold other daemons' sections too (tests running several in one process).
    pub fn new<D: Holds<Sections>>(
        settings: config::Settings<D>,
        db: Database,
        store: Store,
    ) -> Self {
        Self {
            settings: Arc::new(settings.narrow()),
            db,
            store,
            lock_held: Arc::new(AtomicBool::new(false)),
        }
    }

    /// True while this replica holds the lock (for `/readyz`).
    pub fn lock_held(&self) -> Arc<AtomicBool> {
        self.lock_held.clone()
    }

    fn set_lock_held(&self, held: bool) {
        self.lock_held.store(held, Ordering::Relaxed);
        metrics::metrics().lock_held.record(i64::from(held), &[]);
    }

    /// One pass under the lock; `Busy` when another replica holds it.
    pub async fn run_once(&self, options: &PassOptions) -> Result<PassReport, ReconcilerError> {
        let r = &self.settings.reconciler;
        let held = lock::try_acquire(&self.store, r.lock_ttl(), r.lock_renew())
            .await?
            .ok_or(ReconcilerError::Busy)?;
        self.set_lock_held(true);
        let report = run_pass(&self.db, &self.store, Some(&held), options).await;
        // Periods close, and cron schedules are written ahead, under the same lock, after
        // whole passes only (a dry run writes nothing; a pass over one board is an operator's
        // look at that board).
        if !options.dry_run && options.board.is_none() {
            if let Err(e) = periods::close_due(&self.db).await {
                tracing::warn!(error = %e, "the periods due for a close could not be listed");
            }
            // Competitions' runs close after their periods: a run's boards are its cohorts.
            if let Err(e) = competition::close_due(&self.db).await {
                tracing::warn!(error = %e, "the competition runs due for a close could not be listed");
            }
            if let Err(e) = core_periods::extend_schedules(&self.db).await {
                tracing::warn!(error = %e, "the cron schedules running short could not be listed");
            }
            if let Err(e) = periods::seal_next(&self.db, &self.store, &self.settings, &held).await {
                tracing::warn!(error = %e, "the boards that reset could not be listed");
            }
            if let Err(e) = periods::archive_due(
                &self.db,
                &self.store,
                r.period_projection_retention(),
                r.period_archive_grace(),
            )
            .await
            {
                tracing::warn!(error = %e, "the periods due for archiving could not be listed");
            }
            // The review queue's length (an alert watches it grow), and the attempts long past
            // their expiry, in bounded batches.
            match review::pending(&self.db).await {
                Ok(n) => metrics::metrics().reviews_pending.record(n, &[]),
                Err(e) => tracing::warn!(error = %e, "the held scores could not be counted"),
            }
            if let Err(e) = attempt::sweep(&self.db).await {
                tracing::warn!(error = %e, "the expired attempts could not be swept");
            }
        }
        held.release().await;
        self.set_lock_held(false);
        report.record_metrics();
        // The drift history operators read (the console, V11). A pass whose report cannot be
        // recorded still happened: logged, not an error of the pass.
        match serde_json::to_value(&report) {
            Ok(json) => {
                let namespace = self.store.keys().namespace();
                if let Err(e) = history::record_pass(&self.db, namespace, &json).await {
                    tracing::warn!(error = %e, "the pass's report could not be recorded");
                }
            }
            Err(e) => tracing::warn!(error = %e, "the pass's report could not be written as JSON"),
        }
        Ok(report)
    }

    /// The boards an operator asked to check (the console): a pass over each, which repairs
    /// what it finds and records its report as every pass does. A request is taken off the set
    /// before its pass, as rebuild requests are; one that finds the lock held elsewhere is put
    /// back for the next poll.
    async fn serve_checks(&self, options: &PassOptions) {
        let boards = match generation::requested(&self.store, RequestKind::Check, 8).await {
            Ok(boards) => boards,
            Err(e) => {
                tracing::debug!(error = %e, "could not read the check requests");
                return;
            }
        };
        for name in boards {
            match generation::claim_request(&self.store, RequestKind::Check, &name).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::debug!(error = %e, "could not claim a check request");
                    return;
                }
            }
            // Only valid board ids are ever requested; anything else was written by hand.
            let Ok(board) = BoardId::parse_stored(&name) else {
                continue;
            };
            let one = PassOptions {
                board: Some(board.clone()),
                ..options.clone()
            };
            match self.run_once(&one).await {
                Ok(report) => report.log(),
                Err(e) => {
                    if matches!(e, ReconcilerError::Busy) {
                        tracing::debug!(%board, "another reconciler holds the lock; the check waits");
                    } else {
                        tracing::warn!(%board, error = %e, "requested check could not start");
                    }
                    if let Err(e) =
                        generation::request(&self.store, RequestKind::Check, &board).await
                    {
                        tracing::warn!(%board, error = %e, "a check request could not be put back");
                    }
                    return;
                }
            }
        }
    }

    /// A pass every `reconciler.interval_ms` while this replica can take the lock, a standby
    /// otherwise; between passes, every [`requests::POLL`], the requested rebuilds
    /// ([`requests`]). On shutdown a running pass or rebuild gets the grace period, then is
    /// dropped (its lock expires by itself).
    pub async fn run(self, cancel: CancellationToken) {
        let options = PassOptions::from_settings(&self.settings.reconciler);
        let grace = self.settings.shutdown.grace();
        let mut requests = requests::Requests::default();
        let mut next_pass = tokio::time::Instant::now();
        let mut server = None;
        loop {
            // A Redis restarted or failed over is a new server (a new run id): it may hold an
            // older copy of every board (a lagging replica), which no seal shows, so a pass
            // runs now rather than at the next interval.
            if let Some(id) = inspect::run_id(&self.store).await {
                if self.settings.reconciler.pass_on_new_redis
                    && server.as_ref().is_some_and(|known| known != &id)
                {
                    tracing::warn!(run_id = %id, "Redis is a new server (restart or failover): reconciling now");
                    next_pass = tokio::time::Instant::now();
                }
                server = Some(id);
            }
            if tokio::time::Instant::now() >= next_pass {
                let pass = self.run_once(&options);
                tokio::pin!(pass);
                let result = tokio::select! {
                    r = &mut pass => Some(r),
                    _ = cancel.cancelled() => tokio::time::timeout(grace, &mut pass).await.ok(),
                };
                match result {
                    Some(Ok(report)) => report.log(),
                    Some(Err(ReconcilerError::Busy)) => {
                        tracing::debug!("another reconciler holds the lock; standing by");
                    }
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "reconciliation pass could not start");
                    }
                    None => tracing::warn!("reconciliation pass abandoned at shutdown"),
                }
                next_pass = tokio::time::Instant::now() + self.settings.reconciler.interval();
            }
            if cancel.is_cancelled() {
                return;
            }
            let checks = self.serve_checks(&options);
            tokio::pin!(checks);
            tokio::select! {
                () = &mut checks => {}
                _ = cancel.cancelled() => {
                    let _ = tokio::time::timeout(grace, &mut checks).await;
                }
            }
            let served = requests.serve(&self.db, &self.store, &self.settings);
            tokio::pin!(served);
            let result = tokio::select! {
                r = &mut served => Some(r),
                _ = cancel.cancelled() => tokio::time::timeout(grace, &mut served).await.ok(),
            };
            if let Some(Err(e)) = result {
                tracing::debug!(error = %e, "could not read the rebuild requests");
            }
            let wake = next_pass.min(tokio::time::Instant::now() + requests::POLL);
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}
