//! One claimed lane's turn: its next events delivered one after the other, in position order
//! (a board always goes by the same lane, so its events arrive in order), the lane moved past
//! each on a 2xx. The first failure ends the turn: the lane backs off (or parks the event at
//! `dispatcher.max_attempts`) and goes back to the claim. Also one requeued parked event's
//! delivery.
//!
//! No transaction is open across a delivery; the lease covers it, and each delivered event
//! extends it. A turn ends, and gives the lane back, when the lane has caught up with the log,
//! after [`TURN_BATCHES`] batches (so that lanes waiting for a worker get one), or at shutdown
//! after the delivery in flight.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use ledgerboard_core::board::definition::Definitions;
use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::webhook::lane::{self, Claimed, Failure, jitter, retry_delay};
use ledgerboard_core::webhook::parked::{self, Requeued};
use tokio_util::sync::CancellationToken;

use crate::client::{Client, Connection, Target};
use crate::deliver::{Delivery, deliver};
use crate::metrics;
use crate::settings::DispatcherSettings;
use crate::unsettled::Unsettled;

/// Batches one turn delivers at most before giving the lane back.
pub const TURN_BATCHES: usize = 10;
/// How often a lane's position is written while it delivers (and at each batch's end, before a
/// failure is recorded, and at shutdown).
const RECORD_EVERY: Duration = Duration::from_millis(100);

/// What every turn needs.
pub struct Shared {
    pub db: Database,
    pub definitions: Definitions,
    pub client: Client,
    pub settings: DispatcherSettings,
    /// Leases to give back once PostgreSQL answers again.
    pub unsettled: Unsettled,
}

/// How a turn ended (tests and logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// Caught up with the log, or its turn is over: given back.
    Released,
    /// A delivery failed: the lane backs off (or parked the event).
    Failed,
    /// Another claim holds the lane now (this one's lease ran out): nothing written.
    LeaseLost,
    /// PostgreSQL failed: the lease runs out and the lane is claimed again.
    StoreError,
    /// Shutdown: given back after the delivery in flight.
    Stopped,
}

/// Delivers `lane`'s next events until its turn ends.
pub async fn turn(shared: Arc<Shared>, lane: Claimed, stop: CancellationToken) -> TurnEnd {
    let end = deliver_lane(&shared, &lane, &stop).await;
    // After a store error too: should PostgreSQL answer again, the lane is free at once
    // rather than when its lease runs out.
    if matches!(
        end,
        TurnEnd::Released | TurnEnd::Stopped | TurnEnd::StoreError
    ) && let Err(e) = lane::release(&shared.db, &lane).await
    {
        tracing::warn!(error = %e, subscription = %lane.subscription_id, lane = lane.lane, "cannot give the lane back yet; the claim loop tries again");
        shared.unsettled.lane_kept(lane);
    }
    end
}

/// Until when, by this process's clock, the lease surely runs: a store call that fails
/// because PostgreSQL is away is tried again until then (the lane stays this claim's, and
/// resumes where it was when PostgreSQL is back, instead of waiting for the lease to run out).
struct Held {
    until: Instant,
    lease: Duration,
}

impl Held {
    /// A lease of `lease` granted by a call that started at `since`, less a margin for the
    /// clocks (the database's counts from its statement, this one from before the call).
    fn renewed(since: Instant, lease: Duration) -> Held {
        Held {
            until: since + lease - (lease / 10).min(Duration::from_secs(5)),
            lease,
        }
    }
}

/// Runs `op` until it succeeds, fails for another reason than PostgreSQL being away, or the
/// lease would run out before the next try.
async fn persist<T, F, Fut>(held: &Held, mut op: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut wait = Duration::from_millis(100);
    loop {
        match op().await {
            Err(StoreError::Unavailable(_) | StoreError::Contended(_))
                if Instant::now() + wait < held.until =>
            {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

async fn deliver_lane(shared: &Shared, lane: &Claimed, stop: &CancellationToken) -> TurnEnd {
    let s = &shared.settings;
    let target = Target::parse(&lane.url, shared.client.allow_http);
    let mut conn: Option<Connection> = None;
    let mut position = lane.position;
    let mut attempts = lane.attempts;
    // Delivered past `position`, not yet written to the lane.
    let mut delivered: Option<i64> = None;
    let mut recorded = Instant::now();
    // The claim's statement ran just before this turn started.
    let mut held = Held::renewed(Instant::now(), s.lease());
    for _ in 0..TURN_BATCHES {
        if stop.is_cancelled() {
            return TurnEnd::Stopped;
        }
        let limit = s.batch_size.get() as i64;
        let next = persist(&held, || {
            lane::next(&shared.db, &shared.definitions, lane, position, limit)
        });
        let batch = match next.await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, subscription = %lane.subscription_id, lane = lane.lane, "cannot read the lane's events");
                return TurnEnd::StoreError;
            }
        };
        if let Some(through) = batch.gap {
            position = through;
        }
        if batch.events.is_empty() && batch.upto <= position {
            return TurnEnd::Released;
        }
        for pending in &batch.events {
            let event = &pending.event;
            let body = match serde_json::to_string(event) {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!(error = %e, "an event that does not serialize");
                    return TurnEnd::StoreError;
                }
            };
            let delivery = Delivery {
                subscription: &lane.subscription_id,
                position: event.position,
                event_id: event.id,
                kind: &event.kind,
                traceparent: event.traceparent.as_deref(),
                body: Bytes::from(body.clone()),
            };
            match deliver(&shared.client, &mut conn, &target, &lane.secret, &delivery).await {
                Ok(()) => {
                    metrics::lag(unix_now_f64() - pending.occurred_epoch);
                    delivered = Some(event.position);
                    attempts = 0;
                    // The lane's position is written every RECORD_EVERY, not after each
                    // delivery: a commit per delivery (a WAL flush) cost as much as the
                    // delivery itself. What a crash loses is delivered again (at least once).
                    if recorded.elapsed() >= RECORD_EVERY {
                        match record(shared, &held, lane, &mut delivered).await {
                            Ok(Some((p, h))) => {
                                position = p;
                                held = h;
                                recorded = Instant::now();
                            }
                            Ok(None) => {}
                            Err(end) => return end,
                        }
                    }
                }
                Err(error) => {
                    // What went before it is recorded first, so that the retry starts at
                    // this event rather than delivering those again.
                    match record(shared, &held, lane, &mut delivered).await {
                        Ok(Some((_, h))) => held = h,
                        Ok(None) => {}
                        Err(end) => return end,
                    }
                    let attempt = u32::try_from(attempts).unwrap_or(0).saturating_add(1);
                    let failure = Failure {
                        error: &error.to_string(),
                        retry_in: retry_delay(
                            s.backoff_first_ms.get(),
                            s.backoff_max_ms.get(),
                            attempt,
                            jitter(),
                        ),
                        max_attempts: s.max_attempts(),
                        circuit: s.circuit(),
                    };
                    return failed(shared, &held, lane, event, &body, failure).await;
                }
            }
            if stop.is_cancelled() {
                return match record(shared, &held, lane, &mut delivered).await {
                    Ok(_) => TurnEnd::Stopped,
                    Err(end) => end,
                };
            }
        }
        match record(shared, &held, lane, &mut delivered).await {
            Ok(Some((p, h))) => {
                position = p;
                held = h;
                recorded = Instant::now();
            }
            Ok(None) => {}
            Err(end) => return end,
        }
        // Past what the batch covered: a window that matched nothing, or the rest of one after
        // its last event.
        if batch.upto > position {
            let since = Instant::now();
            let advance = persist(&held, || {
                lane::advance(&shared.db, lane, batch.upto, s.lease(), false)
            });
            match advance.await {
                Ok(true) => {
                    position = batch.upto;
                    held = Held::renewed(since, held.lease);
                }
                Ok(false) => return TurnEnd::LeaseLost,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot move the lane past an empty window");
                    return TurnEnd::StoreError;
                }
            }
        }
    }
    TurnEnd::Released
}

/// Writes the lane's position after its last delivered event, if any is unwritten: the new
/// position and lease, or the turn's end when the lease was lost or PostgreSQL failed.
async fn record(
    shared: &Shared,
    held: &Held,
    lane: &Claimed,
    delivered: &mut Option<i64>,
) -> Result<Option<(i64, Held)>, TurnEnd> {
    let Some(through) = *delivered else {
        return Ok(None);
    };
    let since = Instant::now();
    let lease = shared.settings.lease();
    match persist(held, || {
        lane::advance(&shared.db, lane, through, lease, true)
    })
    .await
    {
        Ok(true) => {
            *delivered = None;
            Ok(Some((through, Held::renewed(since, held.lease))))
        }
        Ok(false) => Err(TurnEnd::LeaseLost),
        Err(e) => {
            tracing::warn!(error = %e, subscription = %lane.subscription_id, lane = lane.lane, "delivered, but cannot record it: it will be delivered again");
            Err(TurnEnd::StoreError)
        }
    }
}

async fn failed(
    shared: &Shared,
    held: &Held,
    lane: &Claimed,
    event: &ledgerboard_core::events::Event,
    body: &str,
    failure: Failure<'_>,
) -> TurnEnd {
    match persist(held, || lane::fail(&shared.db, lane, event, body, failure)).await {
        Ok(Some(f)) => {
            if f.parked {
                metrics::parked();
                tracing::warn!(subscription = %lane.subscription_id, lane = lane.lane, position = event.position, event_id = %event.id, attempts = f.attempts, error = failure.error, "delivery parked after its last attempt; the lane moves on");
            } else {
                tracing::info!(subscription = %lane.subscription_id, lane = lane.lane, position = event.position, attempts = f.attempts, retry_in = ?failure.retry_in, error = failure.error, "delivery failed; retrying later");
            }
            if f.circuit_open {
                tracing::warn!(subscription = %lane.subscription_id, open_for = ?failure.circuit.open_for, "the subscription's circuit is open");
            }
            TurnEnd::Failed
        }
        Ok(None) => TurnEnd::LeaseLost,
        Err(e) => {
            tracing::warn!(error = %e, subscription = %lane.subscription_id, "cannot record a failed delivery; the lease runs out instead");
            TurnEnd::StoreError
        }
    }
}

fn unix_now_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Delivers one requeued parked event once: delivered, it is no longer parked; failed, it is
/// parked again until the next requeue.
pub async fn requeued(shared: Arc<Shared>, r: Requeued) {
    let target = Target::parse(&r.url, shared.client.allow_http);
    let mut conn = None;
    let traceparent = traceparent_of(&r.body);
    let delivery = Delivery {
        subscription: &r.subscription_id,
        position: r.position,
        event_id: r.event_id,
        kind: &r.kind,
        traceparent: traceparent.as_deref(),
        body: Bytes::from(r.body.clone()),
    };
    let held = Held::renewed(Instant::now(), shared.settings.lease());
    let outcome = deliver(&shared.client, &mut conn, &target, &r.secret, &delivery).await;
    let recorded = match &outcome {
        Ok(()) => persist(&held, || parked::delivered(&shared.db, &r)).await,
        Err(e) => {
            let error = e.to_string();
            persist(&held, || parked::failed(&shared.db, &r, &error)).await
        }
    };
    match (outcome, recorded) {
        (Ok(()), Ok(_)) => {
            tracing::info!(subscription = %r.subscription_id, position = r.position, "requeued delivery delivered")
        }
        (Err(e), Ok(_)) => {
            tracing::warn!(subscription = %r.subscription_id, position = r.position, error = %e, "requeued delivery failed; parked again")
        }
        (_, Err(e)) => {
            tracing::warn!(subscription = %r.subscription_id, position = r.position, error = %e, "cannot record a requeued delivery; its lease runs out and it is tried again")
        }
    }
}

/// The trace context inside a parked event's body.
fn traceparent_of(body: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()?
        .get("traceparent")?
        .as_str()
        .map(str::to_owned)
}
