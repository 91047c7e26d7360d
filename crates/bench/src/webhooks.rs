//! Webhook deliveries (issue 40): the dispatcher (in this process, as the projector replicas
//! are) delivering `score.accepted` to a local receiver, at 1 and 16 subscriptions.
//!
//! Two phases per subscription count, each on a fresh stack:
//! * **as fast as it goes:** 16 clients post commands back to back for the run's length while
//!   the dispatcher delivers; deliveries/s is every delivery (events × subscriptions) over the
//!   time from the first command to the last delivery, beside the commands/s the api reached
//!   meanwhile (the limit: the rate the events were made at).
//! * **at 50% of that command rate,** offered open loop: whether delivery keeps up (all delivered
//!   within 2 s of the load's end) and the lag of each delivery, from the event's commit
//!   (`occurred_at`) to the receiver's answer, p50 and p99.

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use ledgerboard_core::webhook::{self, NewSubscription, UrlRules};
use ledgerboard_dispatcher::Dispatcher;
use ledgerboard_dispatcher::settings::Sections;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::api::Stack;
use crate::commands::command_request;
use crate::cpu::{Cpu, Meter};
use crate::load::{self, Connection, percentile};

const CLIENTS: usize = 16;
/// Lanes per subscription (its concurrency): every command goes to one board, so one lane
/// carries them all, in order; the others stay idle, as for a receiver of one board.
const LANES: i32 = 4;

#[derive(Debug, Serialize)]
pub struct Burst {
    pub commands: u64,
    pub commands_per_s: f64,
    pub deliveries: u64,
    pub deliveries_per_s: f64,
    /// CPU per delivery, its command included (µs by process: the api, the dispatcher and
    /// the receiver run in this process, `ours`; the load tool under `load`).
    pub cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct Steady {
    pub offered_per_s: f64,
    pub commands: u64,
    pub deliveries: u64,
    /// Seconds after the load's end until the last delivery arrived.
    pub drained_s: f64,
    pub lag_p50_ms: f64,
    pub lag_p99_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct Level {
    pub subscriptions: usize,
    pub burst: Burst,
    pub steady: Steady,
}

#[derive(Debug, Serialize)]
pub struct WebhookFigures {
    pub seconds: f64,
    pub levels: Vec<Level>,
}

/// What the receiver saw: each delivery's event id and subscription, and its lag.
#[derive(Default)]
struct Received {
    ids: HashSet<(u16, String)>,
    lags_ms: Vec<f64>,
    last: Option<Instant>,
}

type Shared = Arc<Mutex<Received>>;

fn lock(r: &Shared) -> std::sync::MutexGuard<'_, Received> {
    r.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub async fn run(quick: bool) -> anyhow::Result<WebhookFigures> {
    let seconds = if quick { 1.0 } else { 8.0 };
    let mut levels = Vec::new();
    for subscriptions in [1usize, 16] {
        eprintln!("webhooks: {subscriptions} subscription(s), commands as fast as they go");
        let burst = burst(subscriptions, seconds).await?;
        let rate = burst.commands_per_s * 0.5;
        eprintln!("webhooks: {subscriptions} subscription(s), commands at {rate:.0}/s");
        let steady = steady(subscriptions, rate, seconds).await?;
        levels.push(Level {
            subscriptions,
            burst,
            steady,
        });
    }
    Ok(WebhookFigures { seconds, levels })
}

/// A fresh stack, a receiver, `subscriptions` subscriptions to it and the dispatcher.
struct Rig {
    stack: Stack,
    received: Shared,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Rig {
    async fn start(subscriptions: usize) -> anyhow::Result<Self> {
        let stack = Stack::start(CLIENTS + 8).await?;
        let stop = CancellationToken::new();
        let received = Shared::default();
        let (addr, receiver) = receiver(received.clone(), stop.clone()).await?;
        let db = ledgerboard_core::db::Database::connect(&stack.settings.database, "bench-hooks")?;
        for k in 0..subscriptions {
            webhook::create(
                &db,
                &NewSubscription {
                    url: format!("http://{addr}/s/{k}"),
                    kinds: vec!["score.accepted".into()],
                    lanes: Some(LANES),
                    ..NewSubscription::default()
                },
                UrlRules::LOCAL,
            )
            .await?;
        }
        let mut sections = Sections::default();
        sections.dispatcher.allow_http = true;
        sections.dispatcher.allow_private_addresses = true;
        let settings = stack.settings.with(sections);
        let dispatcher = Dispatcher::new(settings, db)?;
        let running = tokio::spawn(dispatcher.run(stop.clone()));
        Ok(Self {
            stack,
            received,
            stop,
            tasks: vec![receiver, running],
        })
    }

    /// Waits until `n` distinct deliveries arrived (bounded).
    async fn wait_for(&self, n: u64, limit: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        while (lock(&self.received).ids.len() as u64) < n {
            anyhow::ensure!(
                started.elapsed() < limit,
                "{} of {n} deliveries within {limit:?}",
                lock(&self.received).ids.len()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        for t in self.tasks {
            t.await?;
        }
        self.stack.stop().await
    }
}

async fn burst(subscriptions: usize, seconds: f64) -> anyhow::Result<Burst> {
    let rig = Rig::start(subscriptions).await?;
    let meter = Meter::start();
    let started = Instant::now();
    let load = load::closed_loop(
        rig.stack.addr,
        CLIENTS,
        Duration::from_secs_f64(seconds),
        201,
        command_request,
    )
    .await?;
    let deliveries = load.requests * subscriptions as u64;
    rig.wait_for(deliveries, Duration::from_secs(300)).await?;
    let cpu_us = meter.stop().per(deliveries as f64);
    let last = lock(&rig.received).last.unwrap_or_else(Instant::now);
    rig.stop().await?;
    Ok(Burst {
        commands: load.requests,
        commands_per_s: load.per_s(),
        deliveries,
        deliveries_per_s: deliveries as f64 / (last - started).as_secs_f64(),
        cpu_us,
    })
}

async fn steady(subscriptions: usize, rate: f64, seconds: f64) -> anyhow::Result<Steady> {
    let rig = Rig::start(subscriptions).await?;
    let commands = offer(rig.stack.addr, rate, seconds).await?;
    let ended = Instant::now();
    let deliveries = commands * subscriptions as u64;
    rig.wait_for(deliveries, Duration::from_secs(300)).await?;
    let (last, mut lags) = {
        let r = lock(&rig.received);
        (r.last.unwrap_or(ended), r.lags_ms.clone())
    };
    rig.stop().await?;
    lags.sort_by(f64::total_cmp);
    Ok(Steady {
        offered_per_s: rate,
        commands,
        deliveries,
        drained_s: last.saturating_duration_since(ended).as_secs_f64(),
        lag_p50_ms: percentile(&lags, 0.5),
        lag_p99_ms: percentile(&lags, 0.99),
    })
}

/// Open loop: connection k sends its j-th command at (j × CLIENTS + k) / rate.
async fn offer(addr: SocketAddr, rate: f64, seconds: f64) -> anyhow::Result<u64> {
    load::on_load_runtime(async move {
        let total = (rate * seconds) as u64;
        let started = tokio::time::Instant::now();
        let mut tasks = Vec::new();
        for k in 0..CLIENTS {
            let mut conn = Connection::open(addr).await?;
            tasks.push(tokio::spawn(async move {
                let mut i = k as u64;
                while i < total {
                    tokio::time::sleep_until(started + Duration::from_secs_f64(i as f64 / rate))
                        .await;
                    let answer = conn.send(&command_request(k, i)).await?;
                    anyhow::ensure!(answer.status == 201, "a command answered {}", answer.status);
                    i += CLIENTS as u64;
                }
                anyhow::Ok(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        Ok(total)
    })
    .await
}

/// The receiver: answers 200 to every POST, noting the event id (per subscription, from the
/// path `/s/{k}`), and the lag from the event's `occurred_at` to now.
async fn receiver(
    received: Shared,
    stop: CancellationToken,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                _ = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((s, _)) => s,
                    Err(_) => continue,
                },
            };
            let received = received.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let received = received.clone();
                        async move {
                            let sub: u16 = req
                                .uri()
                                .path()
                                .rsplit('/')
                                .next()
                                .and_then(|k| k.parse().ok())
                                .unwrap_or(u16::MAX);
                            if let Ok(body) = req.into_body().collect().await {
                                note(&received, sub, &body.to_bytes());
                            }
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::new())))
                        }
                    },
                );
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok((addr, task))
}

fn note(received: &Shared, sub: u16, body: &[u8]) {
    let Ok(event) = serde_json::from_slice::<serde_json::Value>(body) else {
        return;
    };
    let (Some(id), Some(at)) = (event["id"].as_str(), event["occurred_at"].as_str()) else {
        return;
    };
    let lag = chrono_lag_ms(at);
    let mut r = lock(received);
    if r.ids.insert((sub, id.to_owned())) {
        if let Some(lag) = lag {
            r.lags_ms.push(lag);
        }
        r.last = Some(Instant::now());
    }
}

/// Milliseconds from an RFC 3339 UTC instant with microseconds (`…T12:00:00.123456Z`) to now.
fn chrono_lag_ms(at: &str) -> Option<f64> {
    let then = chrono::DateTime::parse_from_rfc3339(at).ok()?;
    let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
    Some((now - then.with_timezone(&chrono::Utc)).num_microseconds()? as f64 / 1000.0)
}

impl WebhookFigures {
    pub fn table(&self) -> String {
        let mut out = String::from(
            "### Webhook deliveries to a local receiver (`score.accepted`, one board)\n\n\
             | subscriptions | commands /s (limit) | deliveries /s | deliveries ÷ events made /s | at 50%: offered /s | delivered | drained after load | lag p50 | lag p99 |\n\
             |---|---|---|---|---|---|---|---|---|\n",
        );
        for l in &self.levels {
            out.push_str(&format!(
                "| {} | {:.0} | {:.0} | {:.2} | {:.0} | {} of {} | {:.2} s | {:.1} ms | {:.1} ms |\n",
                l.subscriptions,
                l.burst.commands_per_s,
                l.burst.deliveries_per_s,
                l.burst.deliveries_per_s / (l.burst.commands_per_s * l.subscriptions as f64),
                l.steady.offered_per_s,
                l.steady.deliveries,
                l.steady.commands * l.subscriptions as u64,
                l.steady.drained_s,
                l.steady.lag_p50_ms,
                l.steady.lag_p99_ms,
            ));
        }
        out.push_str(&format!(
            "\n{:.0} s per phase, {CLIENTS} clients, {LANES} lanes per subscription; lag from the event's commit to the receiver.\n\n",
            self.seconds
        ));
        out
    }
}
