//! The last successful contact with PostgreSQL and with Redis, kept by a heartbeat of each
//! daemon on connections of its own, which is what `/readyz` answers from.
//!
//! Why a heartbeat and not a check per probe: a probe that borrows a pooled connection waits
//! behind the commands when the pool is busy (and takes one from them when it is not), and a
//! probe that runs its own query answers "not ready" on every replica at once as soon as
//! PostgreSQL is merely slow. The heartbeat runs on a pool of one connection that no command
//! uses, at most one call in flight per store, and `/readyz` only reads the time of its last
//! success: ready while that is within the staleness bound, so a slow store (calls that still
//! succeed, late) keeps the daemon ready and a dead one makes it unready once the bound has
//! passed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::db::{Database, Op};
use crate::projection::Store;

/// The outcome of the last calls to one store.
#[derive(Debug, Default)]
pub struct Contact {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    last_success: Option<Instant>,
    /// The error of the last call, cleared by a success.
    last_error: Option<String>,
}

impl Contact {
    pub fn succeeded(&self) {
        let mut state = self.lock();
        state.last_success = Some(Instant::now());
        state.last_error = None;
    }

    pub fn failed(&self, error: impl Into<String>) {
        self.lock().last_error = Some(error.into());
    }

    /// Whether the last success is at most `stale` old, and the check's JSON for `/readyz`:
    /// `ok`, `last_success_ms_ago` (absent before the first success) and the last `error`.
    pub fn report(&self, stale: Duration) -> (bool, Value) {
        let state = self.lock();
        let age = state.last_success.map(|at| at.elapsed());
        let ok = age.is_some_and(|age| age <= stale);
        let mut check = json!({ "ok": ok });
        if let Some(age) = age {
            check["last_success_ms_ago"] = json!(age.as_millis() as u64);
        }
        match (&state.last_error, ok, age) {
            (Some(error), _, _) => check["error"] = json!(error),
            (None, false, None) => check["error"] = json!("no successful contact yet"),
            (None, false, Some(_)) => {
                check["error"] = json!(format!("no successful contact for more than {stale:?}"))
            }
            (None, true, _) => {}
        }
        (ok, check)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is two plain values: a panic elsewhere cannot leave it half written.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The two contacts a daemon keeps.
#[derive(Debug, Clone, Default)]
pub struct Contacts {
    pub postgres: Arc<Contact>,
    pub redis: Arc<Contact>,
}

/// How often the heartbeat calls each store: a few times within the staleness bound, so one
/// lost or late call never makes a healthy daemon unready, and at least once a second.
pub fn heartbeat_interval(stale: Duration) -> Duration {
    (stale / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// Calls `SELECT 1` on `db` and `PING` on `store` once (so that a daemon is ready as soon as
/// it serves), then every `every` until `cancel` fires, each call bounded by `limit`,
/// recording the outcomes in `contacts`. `db` and `store` must be the heartbeat's own (a pool
/// of one connection): never the pools the daemon's work uses.
pub async fn start(
    db: Database,
    store: Store,
    contacts: Contacts,
    every: Duration,
    limit: Duration,
    cancel: CancellationToken,
) -> Vec<JoinHandle<()>> {
    let postgres = move || {
        let db = db.clone();
        async move {
            let client = db.client().await.map_err(|e| e.to_string())?;
            db.bounded(Op::Ready, client, async |c| {
                c.simple_query("SELECT 1").await
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
        }
    };
    let redis = move || {
        let store = store.clone();
        async move { store.ping().await.map_err(|e| e.to_string()) }
    };
    tokio::join!(
        call_once(limit, &postgres, &contacts.postgres),
        call_once(limit, &redis, &contacts.redis)
    );
    vec![
        beat(every, limit, cancel.clone(), contacts.postgres, postgres),
        beat(every, limit, cancel, contacts.redis, redis),
    ]
}

async fn call_once<F, Fut>(limit: Duration, call: &F, contact: &Contact)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    match tokio::time::timeout(limit, call()).await {
        Ok(Ok(())) => contact.succeeded(),
        Ok(Err(error)) => contact.failed(error),
        Err(_) => contact.failed(format!("no answer within {limit:?}")),
    }
}

fn beat<F, Fut>(
    every: Duration,
    limit: Duration,
    cancel: CancellationToken,
    contact: Arc<Contact>,
    call: F,
) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        // A call that took longer than the interval is followed by the next one at once, not
        // by a burst of the missed ones.
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = cancel.cancelled() => return,
            }
            call_once(limit, &call, &contact).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contact_is_ready_only_while_its_last_success_is_recent() {
        let contact = Contact::default();
        let (ok, check) = contact.report(Duration::from_secs(5));
        assert!(!ok);
        assert_eq!(check["error"], "no successful contact yet");
        contact.succeeded();
        assert!(contact.report(Duration::from_secs(5)).0);
        // A failure after a recent success is reported, but does not make it unready at once.
        contact.failed("connection refused");
        let (ok, check) = contact.report(Duration::from_secs(5));
        assert!(ok, "{check}");
        assert_eq!(check["error"], "connection refused");
        std::thread::sleep(Duration::from_millis(30));
        let (ok, check) = contact.report(Duration::from_millis(10));
        assert!(!ok, "{check}");
    }

    #[test]
    fn the_heartbeat_beats_a_few_times_within_the_bound() {
        assert_eq!(
            heartbeat_interval(Duration::from_secs(10)),
            Duration::from_secs(1)
        );
        assert_eq!(
            heartbeat_interval(Duration::from_millis(1_000)),
            Duration::from_millis(250)
        );
        assert_eq!(
            heartbeat_interval(Duration::from_millis(100)),
            Duration::from_millis(50)
        );
    }
}
