//! Commit-to-visible latency under steady load: commands offered through the API at 25%, 50%
//! and 75% of the command capacity measured earlier in the run, two projector replicas
//! draining, each level from an empty outbox. A watcher reads the board's version hash every
//! millisecond and notes when each sampled command's version became visible.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::api::Stack;
use crate::cpu::{Cpu, Meter};
use crate::load::{self, Connection, percentile};
use crate::plot;
use crate::projector::start_replica;

const REPLICAS: usize = 2;
/// Every Nth command is watched, to keep the watcher's reads light.
const SAMPLE_EVERY: u64 = 5;
/// Connections the offered load is spread over, each sending its commands at their times, one
/// at a time. A connection whose command is still out when its next one is due sends that one
/// late, so the load is open-loop only while commands take less than CONNECTIONS / rate: with
/// 32, at 75% of the capacity measured by 64 closed-loop clients, that is 1.33 × the latency at
/// capacity, and the load became a 32-client closed loop exactly when commands queued
/// (achieved ÷ offered 0.85–0.97 at 75%). 128 gives 2.7 × that latency before it binds.
const CONNECTIONS: usize = 128;
/// The api's PostgreSQL and Redis pools: those of the commands section's 64 clients, whose
/// capacity the levels are fractions of (more would pass PostgreSQL's 100 connections).
const POOL: usize = 64 + 4;
/// Load offered before the measured phase, unsampled: fresh pools connect and prepare, the
/// projectors load their script. Without it every level's first 0.3 s showed lags of up to
/// 230 ms that belong to start-up, not to steady load.
const WARMUP: Duration = Duration::from_secs(1);

#[derive(Debug, Serialize)]
pub struct Level {
    pub percent: u32,
    pub offered_per_s: f64,
    pub achieved_per_s: f64,
    pub commands: u64,
    pub samples: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// CPU per command by process group (µs), from the first command sent (the warm-up's
    /// included) until every sampled one was seen: the api, the projector replicas and the
    /// watcher (this process), PostgreSQL and Redis.
    pub cpu_us: Cpu,
    /// (seconds into the level, lag in ms) of every sample, for the plot.
    #[serde(skip)]
    pub series: Vec<(f64, f64)>,
}

#[derive(Debug, Serialize)]
pub struct LatencyFigures {
    pub capacity_per_s: f64,
    pub warmup_seconds: f64,
    pub seconds: f64,
    pub replicas: usize,
    pub sample_every: u64,
    pub levels: Vec<Level>,
    pub plot: String,
}

/// A sampled command waiting to be seen: user, version, when its answer arrived.
type Waiting = Arc<Mutex<Vec<(String, i64, Instant)>>>;

/// What the load goes to: the board whose entries are watched becoming visible, the boards
/// declared first (each with its definition, in order: a board another one feeds comes
/// before it; none for an undeclared board) and the command each connection sends
/// (`(connection, i)`).
pub struct Target {
    pub board: &'static str,
    pub definitions: &'static [(&'static str, &'static str)],
    pub request: fn(usize, u64) -> Vec<u8>,
}

/// The undeclared `add` board that [`crate::commands`] measured.
const ADD: Target = Target {
    board: crate::commands::BOARD,
    definitions: &[],
    request: crate::commands::command_request,
};

pub async fn run(quick: bool, capacity: f64, out: &Path) -> anyhow::Result<LatencyFigures> {
    let seconds = if quick { 1.0 } else { 15.0 };
    let mut levels = Vec::new();
    for percent in [25, 50, 75] {
        let rate = capacity * f64::from(percent) / 100.0;
        eprintln!("commit-to-visible at {percent}% of capacity ({rate:.0} commands/s)");
        levels.push(level(percent, rate, seconds, &ADD).await?);
    }
    let plot_path = out.join("commit-to-visible.png");
    let series: Vec<_> = levels
        .iter()
        .map(|l| plot::Series {
            label: format!(
                "{}% ({:.0}/s): p50 {:.1} ms, p99 {:.1} ms",
                l.percent, l.achieved_per_s, l.p50_ms, l.p99_ms
            ),
            points: &l.series,
        })
        .collect();
    plot::lag_over_time(
        &plot_path,
        &format!(
            "Commit-to-visible lag, every {SAMPLE_EVERY}th command, {REPLICAS} projector replicas"
        ),
        &series,
    )?;
    Ok(LatencyFigures {
        capacity_per_s: capacity,
        warmup_seconds: WARMUP.as_secs_f64(),
        seconds,
        replicas: REPLICAS,
        sample_every: SAMPLE_EVERY,
        levels,
        plot: plot_path.display().to_string(),
    })
}

/// One level: `rate` commands/s offered to `target` on a fresh stack for `seconds`.
pub async fn level(
    percent: u32,
    rate: f64,
    seconds: f64,
    target: &Target,
) -> anyhow::Result<Level> {
    let stack = Stack::start(POOL).await?;
    stack.declare_all(target.definitions).await?;
    let cancel = CancellationToken::new();
    let replicas: Vec<_> = (0..REPLICAS)
        .map(|_| start_replica(&stack.settings, &cancel))
        .collect::<anyhow::Result<_>>()?;
    let store = Store::connect(&stack.settings.redis)?;
    let versions_key = store
        .keys()
        .versions(&landing_board(&stack, target.board).await?);

    let waiting: Waiting = Arc::default();
    // The measured phase starts after the warm-up.
    let started = Instant::now() + WARMUP;
    let stop_watching = CancellationToken::new();
    let watcher = tokio::spawn(watch(
        store.clone(),
        versions_key,
        waiting.clone(),
        started,
        stop_watching.clone(),
    ));
    let meter = Meter::start();
    let (commands, elapsed, all) =
        offer(stack.addr, rate, seconds, target.request, waiting.clone()).await?;
    anyhow::ensure!(
        Instant::now() > started,
        "the load ended inside its warm-up"
    );
    // Every sampled command must become visible; the wait is bounded.
    let drained = Instant::now();
    while !lock(&waiting).is_empty() && drained.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let cpu_us = meter.stop().per(all as f64);
    stop_watching.cancel();
    let mut series = watcher.await??;
    cancel.cancel();
    for (_, h) in replicas {
        h.await?;
    }
    anyhow::ensure!(
        lock(&waiting).is_empty(),
        "{} sampled commands never became visible",
        lock(&waiting).len()
    );
    stack.stop().await?;
    series.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut lags: Vec<f64> = series.iter().map(|p| p.1).collect();
    lags.sort_by(f64::total_cmp);
    anyhow::ensure!(!lags.is_empty(), "no command became visible");
    Ok(Level {
        percent,
        offered_per_s: rate,
        achieved_per_s: commands as f64 / elapsed,
        commands,
        samples: lags.len(),
        p50_ms: percentile(&lags, 0.50),
        p95_ms: percentile(&lags, 0.95),
        p99_ms: percentile(&lags, 0.99),
        max_ms: percentile(&lags, 1.0),
        cpu_us,
        series,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Open loop: connection k sends its j-th command at (j × CONNECTIONS + k) / rate; one that
/// falls behind sends at once. The first [`WARMUP`] is offered but neither sampled nor
/// counted. Returns the commands sent after it, the seconds they took, and every command sent.
async fn offer(
    addr: std::net::SocketAddr,
    rate: f64,
    seconds: f64,
    command_request: fn(usize, u64) -> Vec<u8>,
    waiting: Waiting,
) -> anyhow::Result<(u64, f64, u64)> {
    load::on_load_runtime(async move {
        let first = (rate * WARMUP.as_secs_f64()) as u64;
        let total = first + (rate * seconds) as u64;
        let mut connections = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            connections.push(Connection::open(addr).await?);
        }
        let started = tokio::time::Instant::now();
        let mut tasks = Vec::new();
        for (k, mut conn) in connections.into_iter().enumerate() {
            let waiting = waiting.clone();
            tasks.push(tokio::spawn(async move {
                let (mut sent, mut all) = (0u64, 0u64);
                let mut i = k as u64;
                while i < total {
                    tokio::time::sleep_until(started + Duration::from_secs_f64(i as f64 / rate))
                        .await;
                    let request = command_request(k, i);
                    let answer = conn.send(&request).await?;
                    anyhow::ensure!(
                        answer.status == 201,
                        "{}: {}",
                        answer.status,
                        String::from_utf8_lossy(&answer.body)
                    );
                    all += 1;
                    if i < first {
                        i += CONNECTIONS as u64;
                        continue;
                    }
                    sent += 1;
                    if i.is_multiple_of(SAMPLE_EVERY) {
                        let outcome: serde_json::Value = serde_json::from_slice(&answer.body)?;
                        let user = outcome["user_id"]
                            .as_str()
                            .context("answer without user_id")?
                            .to_owned();
                        let version = outcome["version"]
                            .as_i64()
                            .context("answer without version")?;
                        lock(&waiting).push((user, version, Instant::now()));
                    }
                    i += CONNECTIONS as u64;
                }
                anyhow::Ok((sent, all))
            }));
        }
        let (mut sent, mut all) = (0, 0);
        for t in tasks {
            let (s, a) = t.await??;
            sent += s;
            all += a;
        }
        let measured = started + WARMUP;
        Ok((
            sent,
            tokio::time::Instant::now()
                .saturating_duration_since(measured)
                .as_secs_f64(),
            all,
        ))
    })
    .await
}

/// Reads the sampled users' versions every millisecond; returns (seconds since `started`,
/// lag in ms) for every sample seen.
async fn watch(
    store: Store,
    key: String,
    waiting: Waiting,
    started: Instant,
    stop: CancellationToken,
) -> anyhow::Result<Vec<(f64, f64)>> {
    let mut conn = store.connection().await?;
    let mut seen = Vec::new();
    while !stop.is_cancelled() {
        let batch: Vec<_> = lock(&waiting).clone();
        if !batch.is_empty() {
            let mut pipe = redis::pipe();
            for (user, _, _) in &batch {
                pipe.cmd("HGET").arg(&key).arg(user);
            }
            // "<version>" or, on boards with earliest-first ties, "<version>:<tie key>".
            let stored: Vec<Option<String>> = pipe.query_async(&mut conn).await?;
            let versions = stored
                .into_iter()
                .map(|s| s.and_then(|s| s.split(':').next().and_then(|v| v.parse::<i64>().ok())));
            let now = Instant::now();
            let mut done = Vec::new();
            for ((user, version, at), got) in batch.iter().zip(versions) {
                if got.is_some_and(|g| g >= *version) {
                    done.push((user.clone(), *version));
                    seen.push((
                        at.saturating_duration_since(started).as_secs_f64(),
                        now.duration_since(*at).as_secs_f64() * 1000.0,
                    ));
                }
            }
            lock(&waiting).retain(|(u, v, _)| !done.contains(&(u.clone(), *v)));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(seen)
}

/// The board id commands of `board` land in: the board itself, or, on a board that resets, its
/// current period (the kinds' schedule is weekly: one period for the whole level).
async fn landing_board(stack: &Stack, board: &str) -> anyhow::Result<BoardId> {
    let board = BoardId::parse(board)?;
    let db = ledgerboard_core::db::Database::connect(&stack.settings.database, "bench-latency")?;
    Ok(
        match ledgerboard_core::board::periods::current(&db, &board).await? {
            Some(p) => board.in_period(&p.current)?,
            None => board,
        },
    )
}
