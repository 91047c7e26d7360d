//! One claim loop: claim a batch, apply it to Redis in one pipeline, record the outcome.
//!
//! Transactional mode holds the claimed rows' locks in one transaction around the Redis call;
//! `idle_in_transaction_session_timeout` (set on every session) and the Redis response timeout
//! bound how long a stalled Redis can keep them. Leased mode writes a lease in a short
//! transaction, calls Redis with no transaction open, then publishes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::settings::{ClaimMode, Settings, batch_deadline};
use deadpool_postgres::Object;
use ledgerboard_core::backoff::Backoff;
use ledgerboard_core::db::StatementClient;
use ledgerboard_core::db::outbox::{self, Claimed, RetryPolicy};
use ledgerboard_core::db::{Database, StoreError, commit};
use ledgerboard_core::events::top as top_changed;
use ledgerboard_core::model::ProjectionEntry;
use ledgerboard_core::projection::top::BoardTop;
use ledgerboard_core::projection::{self, Applied, Outage, RowOutcome, Seal, Store};
use ledgerboard_core::telemetry::trace_context;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::metrics::{BatchErrorKind, Counters, Tally};

#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    Outage(#[from] Outage),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the batch took longer than {0:?}; its connection was dropped")]
    Timeout(Duration),
}

impl BatchError {
    /// The `kind` label of `ledgerboard_projection_batch_errors_total`.
    pub fn kind(&self) -> BatchErrorKind {
        match self {
            BatchError::Outage(_) => BatchErrorKind::RedisOutage,
            BatchError::Store(_) => BatchErrorKind::Database,
            BatchError::Timeout(_) => BatchErrorKind::Timeout,
        }
    }
}

impl From<tokio_postgres::Error> for BatchError {
    fn from(err: tokio_postgres::Error) -> Self {
        BatchError::Store(err.into())
    }
}

#[derive(Clone)]
pub struct Worker {
    pub db: Database,
    pub store: Store,
    pub settings: Arc<Settings>,
    pub counters: Arc<Counters>,
    /// Leased mode: the name written into `lease_owner`.
    pub owner: String,
}

impl Worker {
    /// Claims until `cancel` fires: at once again after a full batch, else on a notification
    /// or after the poll interval; after an error, after a capped back-off.
    pub async fn run(self, cancel: CancellationToken, mut wake: watch::Receiver<u64>) {
        let p = &self.settings.projector;
        let mut backoff = Backoff::new(Duration::from_millis(100), p.outage_backoff_max());
        let mut failing_since: Option<std::time::Instant> = None;
        while !cancel.is_cancelled() {
            // Everything notified up to here is visible to the claim below.
            wake.borrow_and_update();
            match self.bounded_batch(&cancel).await {
                None => break,
                Some(Ok(tally)) => {
                    if let Some(since) = failing_since.take() {
                        tracing::info!(after = ?since.elapsed(), "projection resumed");
                    }
                    backoff.reset();
                    if tally.claimed == p.batch_size.get() {
                        continue;
                    }
                }
                Some(Err(e)) => {
                    failing_since.get_or_insert_with(std::time::Instant::now);
                    tracing::warn!(error = %e, retry_in = ?backoff.current(), "projection batch abandoned; its rows will be delivered again");
                    if !backoff.wait(&cancel).await {
                        break;
                    }
                    continue;
                }
            }
            tokio::select! {
                _ = cancel.cancelled() => break,
                changed = wake.changed() => {
                    if changed.is_err() {
                        // The listener is gone for good: poll.
                        tokio::time::sleep(p.poll_interval()).await;
                    }
                }
                _ = tokio::time::sleep(p.poll_interval()) => {}
            }
        }
    }

    /// One batch within its deadline. During shutdown the batch may finish within the grace
    /// period; past it, it is abandoned (`None`) and its rows are delivered again.
    async fn bounded_batch(&self, cancel: &CancellationToken) -> Option<Result<Tally, BatchError>> {
        let mut client = match self.db.client().await {
            Ok(c) => c,
            Err(e) => {
                let e = BatchError::from(e);
                self.counters.batch_error(e.kind());
                return Some(Err(e));
            }
        };
        let deadline = batch_deadline(&self.settings);
        let grace = self.settings.shutdown.grace().min(deadline);
        let started = Instant::now();
        let (result, connection_unusable) = {
            let batch = self.unbounded_batch(&mut client);
            tokio::pin!(batch);
            tokio::select! {
                r = tokio::time::timeout(deadline, &mut batch) => match r {
                    Ok(r) => (Some(r), false),
                    Err(_) => (Some(Err(BatchError::Timeout(deadline))), true),
                },
                _ = cancel.cancelled() => match tokio::time::timeout(grace, &mut batch).await {
                    Ok(r) => (Some(r), false),
                    Err(_) => (None, true),
                },
            }
        };
        if connection_unusable {
            // A round trip is still in flight: the session's state is unknown. Closing it
            // makes PostgreSQL roll back and release the row locks.
            drop(Object::take(client));
        }
        match &result {
            Some(Ok(tally)) => self.counters.batch(tally, started),
            Some(Err(e)) => self.counters.batch_error(e.kind()),
            None => {}
        }
        result
    }

    /// One batch, unbounded and not counted, as a test drives it.
    #[cfg(feature = "test-hooks")]
    pub async fn batch(&self, client: &mut Object) -> Result<Tally, BatchError> {
        self.unbounded_batch(client).await
    }

    /// One batch, unbounded (the caller bounds it).
    async fn unbounded_batch(&self, client: &mut Object) -> Result<Tally, BatchError> {
        match self.settings.projector.mode {
            ClaimMode::Transactional => self.transactional_batch(client).await,
            ClaimMode::Leased => self.leased_batch(client).await,
        }
    }

    async fn transactional_batch(&self, client: &mut Object) -> Result<Tally, BatchError> {
        let tx = client.transaction().await?;
        let batch_size = self.settings.projector.batch_size.get();
        let claimed = outbox::claim(&tx, self.db.statements(), batch_size).await?;
        if claimed.is_empty() {
            tx.commit().await?;
            return Ok(Tally::default());
        }
        let span = batch_span(&claimed);
        async {
            let (entries, invalid) = split(claimed);
            let applied = match self.apply(&entries).await {
                Ok(applied) => applied,
                Err(outage) => {
                    let _ = tx.rollback().await;
                    return Err(outage.into());
                }
            };
            let tally = self.record(&tx, &entries, applied, invalid, None).await?;
            commit(tx).await?;
            Ok(tally)
        }
        .instrument(span)
        .await
    }

    async fn leased_batch(&self, client: &mut Object) -> Result<Tally, BatchError> {
        let p = &self.settings.projector;
        let claim = outbox::claim_leased(
            &*client,
            self.db.statements(),
            p.batch_size.get(),
            &self.owner,
            p.lease(),
        );
        let claimed = claim.await?;
        if claimed.is_empty() {
            return Ok(Tally::default());
        }
        let span = batch_span(&claimed);
        async {
            let ids: Vec<i64> = claimed.iter().map(|c| c.id).collect();
            let (entries, invalid) = split(claimed);
            let applied = match self.apply(&entries).await {
                Ok(applied) => applied,
                Err(outage) => {
                    // Give the rows back now rather than when the lease runs out.
                    let _ =
                        outbox::release(&*client, self.db.statements(), &ids, &self.owner).await;
                    return Err(outage.into());
                }
            };
            let tx = client.transaction().await?;
            let tally = self
                .record(&tx, &entries, applied, invalid, Some(&self.owner))
                .await?;
            commit(tx).await?;
            Ok(tally)
        }
        .instrument(span)
        .await
    }

    /// The batch in one pipelined round trip, with each board's first N read in the same
    /// round trip for `rank.top_changed` (none when `events.top_n` is 0).
    async fn apply(&self, entries: &[ProjectionEntry]) -> Result<Applied, Outage> {
        projection::apply_batch_with_tops(
            &self.store,
            entries,
            self.settings.projector.event_marker_ttl(),
            self.settings.events.top_n.get() as u64,
        )
        .await
    }

    /// Publishes the rows whose projection is done and charges an attempt to the others; in
    /// the same transaction, records the first N of each board with a published row and queues
    /// a `rank.top_changed` where it changed (core `events/top.rs`), so that event is written
    /// iff the batch is recorded. In leased mode only rows still leased to `owner` are touched:
    /// a row whose lease ran out and went to another projector is that projector's to record.
    async fn record(
        &self,
        client: &impl StatementClient,
        entries: &[ProjectionEntry],
        applied: Applied,
        mut failures: Vec<(i64, String)>,
        owner: Option<&str>,
    ) -> Result<Tally, BatchError> {
        let Applied { outcomes, tops } = applied;
        let mut tally = Tally {
            claimed: entries.len() + failures.len(),
            ..Tally::default()
        };
        let mut published = Vec::with_capacity(entries.len());
        // Boards with a row recorded as done: only their first N is compared (a board whose
        // rows all failed is reported by the batch that projects them).
        let mut done_boards = std::collections::HashSet::new();
        for (entry, outcome) in entries.iter().zip(outcomes) {
            match outcome {
                RowOutcome::Applied => tally.applied += 1,
                RowOutcome::Duplicate => tally.duplicate += 1,
                RowOutcome::Stale => tally.stale += 1,
                RowOutcome::Failed(msg) => {
                    failures.push((entry.outbox_id, msg));
                    continue;
                }
            }
            published.push(entry.outbox_id);
            done_boards.insert(&entry.board);
        }
        outbox::publish(client, self.db.statements(), &published, owner).await?;
        let reads: Vec<top_changed::Read> = tops
            .iter()
            .filter(|t| done_boards.contains(&t.board))
            .filter_map(reported)
            .collect();
        tally.top_changed = top_changed::record(client, self.db.statements(), &reads).await?;
        let p = &self.settings.projector;
        let policy = RetryPolicy {
            base_ms: p.retry_base_ms.ms(),
            max_ms: p.retry_max_ms.ms(),
            max_attempts: p.max_attempts,
        };
        tally.failed = failures.len() as u64;
        if !failures.is_empty() {
            tally.parked =
                outbox::fail(client, self.db.statements(), &failures, policy, owner).await?;
        }
        if let Some((id, error)) = failures.first() {
            tracing::warn!(
                failed = failures.len(),
                parked = tally.parked,
                first_id = id,
                first_error = %error,
                "rows refused by the projection script; they will be retried"
            );
        }
        Ok(tally)
    }
}

/// The read of a board whose seal is whole, as `rank.top_changed` records it; a board that is
/// not whole (lost, being rebuilt) has no first N worth reporting.
fn reported(top: &BoardTop) -> Option<top_changed::Read> {
    (top.seal == Seal::Whole).then(|| top_changed::Read {
        board: top.board.clone(),
        sequence: top.sequence,
        top: top.entries_json(),
    })
}

/// Most requests one batch span links to (the SDK's default limit on links per span).
const MAX_LINKS: usize = 128;

/// The span of one claimed batch, linked to the requests that produced its rows (their trace
/// context travelled in the outbox), so a trace viewer leads from a command to its projection.
fn batch_span(claimed: &[Claimed]) -> tracing::Span {
    let span = tracing::info_span!("project batch", rows = claimed.len());
    for sc in claimed
        .iter()
        .filter_map(|c| {
            c.traceparent
                .as_deref()
                .and_then(trace_context::parse_traceparent)
        })
        .take(MAX_LINKS)
    {
        span.add_link(sc);
    }
    span
}

/// Rows that can be projected, and failures for those whose ids do not validate.
fn split(claimed: Vec<Claimed>) -> (Vec<ProjectionEntry>, Vec<(i64, String)>) {
    let mut entries = Vec::with_capacity(claimed.len());
    let mut invalid = Vec::new();
    for c in claimed {
        match c.entry {
            Ok(entry) => entries.push(entry),
            Err(msg) => invalid.push((c.id, msg)),
        }
    }
    (entries, invalid)
}
