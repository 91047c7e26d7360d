//! `ledgerboard-dispatcher`: delivers the event log (core `events/`) to webhook subscriptions
//! (core `webhook/`), signed, at least once, in order per board and subscription. Any number
//! of replicas may run: lanes are claimed by lease (`FOR UPDATE SKIP LOCKED`), and every write
//! of a lane's progress is fenced by the claim that holds it. Every replica also runs the event
//! log's upkeep (the sequencer and retention; one process at a time does the work).
//!
//! Here: the claim loop ([`Dispatcher::run`]); `lane.rs` (a lane's turn, a requeued parked
//! event's delivery), `unsettled.rs` (leases whose claim's answer was lost, or that a turn could
//! not give back), `deliver.rs` (one signed delivery and its span), `client.rs` (hyper over TCP
//! or rustls, every step bounded; the addresses a receiver may be at are core's
//! `webhook/address.rs`), `metrics.rs`, `settings.rs`.

mod client;
mod deliver;
mod lane;
pub mod metrics;
pub mod settings;
mod unsettled;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ledgerboard_core::backoff::Backoff;
use ledgerboard_core::board::definition::Definitions;
use ledgerboard_core::config::{self, Holds};
use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::events::sequence::{self, Upkeep};
use ledgerboard_core::webhook::{lane as lanes, parked};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use crate::client::SendError;
use crate::lane::Shared;
use crate::settings::{Sections, Settings};

#[derive(Debug, thiserror::Error)]
pub enum DispatcherError {
    #[error(transparent)]
    Tls(#[from] ledgerboard_core::tls::TlsFileError),
}

/// How long a board's definition (its columns, for rendering score events) is kept.
const DEFINITIONS_TTL: Duration = Duration::from_secs(60);

pub struct Dispatcher {
    settings: Arc<Settings>,
    shared: Arc<Shared>,
    /// This process, in every claim's holder (the pod's name, HOSTNAME, and a random part).
    instance: String,
    claims: AtomicU64,
}

impl Dispatcher {
    /// `settings` may hold other daemons' sections too (tests running several in one process).
    pub fn new<D: Holds<Sections>>(
        settings: config::Settings<D>,
        db: Database,
    ) -> Result<Self, DispatcherError> {
        let settings: Settings = settings.narrow();
        let client = client::Client::new(&settings.dispatcher)?;
        Ok(Self {
            shared: Arc::new(Shared {
                db,
                definitions: Definitions::new(DEFINITIONS_TTL),
                client,
                settings: settings.dispatcher.clone(),
                unsettled: unsettled::Unsettled::default(),
            }),
            settings: Arc::new(settings),
            instance: ledgerboard_core::ids::instance_id("dispatcher"),
            claims: AtomicU64::new(0),
        })
    }

    /// A holder no other claim has had: this process's instance id and a counter.
    fn holder(&self) -> String {
        format!(
            "{}/{}",
            self.instance,
            self.claims.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Runs the event log's upkeep, the gauges and the claim loop until `cancel` fires; then
    /// lets the deliveries in flight finish (each gives its lane back), for at most the
    /// shutdown grace and a second.
    pub async fn run(self, cancel: CancellationToken) {
        let s = &self.settings;
        let d = &s.dispatcher;
        let db = self.shared.db.clone();
        let (head_tx, mut head) = tokio::sync::watch::channel(0_i64);
        let upkeep = tokio::spawn(sequence::upkeep(
            db.clone(),
            Upkeep::from(&s.events),
            cancel.clone(),
            head_tx,
        ));
        let gauges =
            metrics::spawn_gauges(db, s.telemetry.outbox_sample_interval(), cancel.clone());
        let mut tasks: JoinSet<()> = JoinSet::new();
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
        let mut last_requeue_claim: Option<tokio::time::Instant> = None;
        while !cancel.is_cancelled() {
            let requeues = last_requeue_claim.is_none_or(|at| at.elapsed() >= d.poll_interval());
            if requeues {
                last_requeue_claim = Some(tokio::time::Instant::now());
            }
            // Before claiming more: a claim whose answer was lost may hold lanes no task works.
            // A failure here does not hold the claim back (it fails too while PostgreSQL is away).
            if let Err(e) = self
                .shared
                .unsettled
                .settle(&self.shared.db, d.lease())
                .await
            {
                tracing::warn!(error = %e, "cannot give back the leases of unanswered claims yet");
            }
            if let Err(e) = self.claim(&mut tasks, requeues, &cancel).await {
                tracing::warn!(error = %e, retry_in = ?backoff.current(), "cannot claim lanes; trying again");
                if !backoff.wait(&cancel).await {
                    break;
                }
                continue;
            }
            backoff.reset();
            tokio::select! {
                _ = cancel.cancelled() => break,
                // A delivery slot came free.
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                // The log moved (whichever process sequenced it).
                changed = head.changed() => {
                    if changed.is_err() {
                        tokio::time::sleep(d.poll_interval()).await;
                    }
                }
                _ = tokio::time::sleep(d.poll_interval()) => {}
            }
        }
        let limit = s.shutdown.grace() + Duration::from_secs(1);
        let in_flight = tasks.len();
        let drained =
            tokio::time::timeout(limit, async { while tasks.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::warn!(
                ?limit,
                in_flight,
                "deliveries still running after the shutdown grace; their leases run out"
            );
            tasks.abort_all();
        }
        let _ = upkeep.await;
        gauges.abort();
    }

    /// Claims up to the free delivery slots: requeued parked events first (at most half of
    /// the slots, when `requeues`), then lanes; spawns a task for each.
    async fn claim(
        &self,
        tasks: &mut JoinSet<()>,
        requeues: bool,
        cancel: &CancellationToken,
    ) -> Result<(), StoreError> {
        let d = &self.settings.dispatcher;
        let workers = d.workers.get();
        let free = workers.saturating_sub(tasks.len());
        if free == 0 {
            return Ok(());
        }
        // A failed claim may have committed all the same (its answer lost): its holder goes to
        // `unsettled`, to give back what it leased. Parked deliveries and lanes are claimed
        // under holders of their own, so giving back one claim never touches the other's
        // leases, which tasks are working.
        if requeues {
            let holder = self.holder();
            let slots = (free / 2).max(1) as i64;
            let claimed = parked::claim(&self.shared.db, &holder, d.lease(), slots)
                .await
                .inspect_err(|_| self.shared.unsettled.claim_lost(holder.clone()))?;
            for r in claimed {
                tasks.spawn(lane::requeued(self.shared.clone(), r));
            }
        }
        let free = workers.saturating_sub(tasks.len());
        if free == 0 {
            return Ok(());
        }
        let holder = self.holder();
        let claimed = lanes::claim(
            &self.shared.db,
            &holder,
            d.lease(),
            free as i64,
            d.circuit(),
        )
        .await
        .inspect_err(|_| self.shared.unsettled.claim_lost(holder.clone()))?;
        for l in claimed {
            if l.trial {
                tracing::info!(subscription = %l.subscription_id, lane = l.lane, "the circuit's open time is over: one trial delivery");
            }
            let (shared, stop) = (self.shared.clone(), cancel.clone());
            tasks.spawn(async move {
                let end = lane::turn(shared, l, stop).await;
                tracing::debug!(?end, "lane turn over");
            });
        }
        Ok(())
    }
}
