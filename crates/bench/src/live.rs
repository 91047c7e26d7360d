//! Live updates (issue 40): the SSE fan-out of one api process, and what `rank.top_changed`
//! costs the projector.
//!
//! Fan-out: `ledgerboard-api` as a process of its own (its resident memory is read from
//! `/proc/<pid>/status`), a projector in this process, one board sealed from its start. N
//! clients (10,000 in a full run, 500 with `--quick`) open `GET /v1/boards/live-b/live` on raw
//! sockets, each counting the messages it reads. Then changes of the board's first entry, one
//! at a time: the time from a command's answer until every client has read one more message
//! (projector, pub/sub, the hub's read, the fan-out); then commands as fast as one client sends
//! them for a few seconds: the messages delivered per second, coalesced by
//! `api.live_min_interval_ms`. Memory: the api's RSS with one stream open and with N, per
//! stream. The open-files limit of this process (inherited by the api) bounds N: each
//! stream is a socket on both sides; N is lowered to fit, and the report says so (raise it
//! with `ulimit -n` before the run; no `setrlimit` without libc).
//!
//! Projector: one replica drains a backlog of a sealed board with `events.top_n` = 0 and = 10
//! (every row of the seeded backlog beats the first entry, so nearly every batch changes the
//! first N: the worst case). Both include the change sequence and the PUBLISH of every
//! projection call, which cost no round trip; `top_n` = 10 adds one script call per board in
//! the batch's round trip and one statement per batch in PostgreSQL.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::model::{BoardId, Order, Sort, TieBreak};
use ledgerboard_core::projection::{Store, generation};
use ledgerboard_testkit::{TEST_TOKEN, seed_outbox, test_tokens};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::cpu::{Cpu, Meter};
use crate::projector::{start_replica, wait_delivered};
use crate::reconciler::{binary, status_kb};

const BOARD: &str = "live-b";

#[derive(Debug, Serialize)]
pub struct TopDrain {
    pub top_n: usize,
    pub rows: i64,
    pub rows_per_s: f64,
    /// CPU per drained row (µs by process: the replica runs in this process, `ours`).
    pub cpu_us: Cpu,
    /// `rank.top_changed` events the drain queued.
    pub events: u64,
}

#[derive(Debug, Serialize)]
pub struct LiveFigures {
    /// Streams asked for, and opened (fewer when the open-files limit is lower).
    pub clients_wanted: usize,
    pub clients: usize,
    pub open_files_limit: Option<u64>,
    pub connect_seconds: f64,
    pub rss_one_mb: f64,
    pub rss_all_mb: f64,
    pub bytes_per_stream: f64,
    /// One change at a time: from the command's answer to its message at every client.
    pub fanout_p50_ms: f64,
    pub fanout_max_ms: f64,
    pub changes: usize,
    /// Commands back to back: messages read per second over all clients, and the commands.
    pub burst_seconds: f64,
    pub burst_commands: u64,
    pub messages_per_s: f64,
    pub bytes_per_s: f64,
    pub min_interval_ms: u64,
    pub projector: Vec<TopDrain>,
}

pub async fn run(quick: bool) -> anyhow::Result<LiveFigures> {
    let projector = vec![drain(quick, 0).await?, drain(quick, 10).await?];
    let wanted = if quick { 500 } else { 10_000 };
    let limit = open_files_limit();
    // Room for the pools, the projector, the files of the run.
    let clients = limit.map_or(wanted, |l| wanted.min((l as usize).saturating_sub(300)));
    if clients < wanted {
        eprintln!(
            "live: {clients} streams, not {wanted}: the open-files limit is {limit:?} (ulimit -n)"
        );
    }
    let mut figures = fanout(clients, quick).await?;
    figures.clients_wanted = wanted;
    figures.open_files_limit = limit;
    figures.projector = projector;
    Ok(figures)
}

/// One replica drains `rows` of a sealed board with `events.top_n` = `top_n`.
async fn drain(quick: bool, top_n: usize) -> anyhow::Result<TopDrain> {
    let rows: i64 = if quick { 20_000 } else { 200_000 };
    eprintln!("live: projector drain with events.top_n = {top_n}");
    let (db, _redis, mut settings) = crate::settings::fresh().await?;
    settings.projector.batch_size = const { Count::of(500) };
    settings.projector.poll_interval_ms = Millis::of(100);
    settings.events.top_n = Count::new(top_n)?;
    let store = Store::connect(&settings.redis)?;
    let board = BoardId::parse(BOARD)?;
    generation::seal_new(
        &store,
        &board,
        Order::of(Sort::Descending, TieBreak::UserId),
    )
    .await?;
    let client = db.client().await;
    seed_outbox(&client, BOARD, rows / 20, rows).await;
    // Statistics for the claim's plan, as the projector section's drains have them.
    crate::projector::reset_outbox(&client).await?;
    let cancel = CancellationToken::new();
    let meter = Meter::start();
    let started = Instant::now();
    let replica = start_replica(&settings, &cancel)?;
    let replicas = [replica];
    wait_delivered(&replicas, rows as u64, Duration::from_secs(600)).await?;
    let secs = started.elapsed().as_secs_f64();
    let cpu_us = meter.stop().per(rows as f64);
    let events = replicas[0].0.snapshot().top_changed;
    cancel.cancel();
    let [(_, handle)] = replicas;
    handle.await?;
    Ok(TopDrain {
        top_n,
        rows,
        rows_per_s: rows as f64 / secs,
        cpu_us,
        events,
    })
}

/// The soft `Max open files` of this process (`/proc/self/limits`).
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Messages read by all the clients, and their bytes.
#[derive(Default)]
struct Counts {
    messages: AtomicU64,
    bytes: AtomicU64,
}

async fn fanout(clients: usize, quick: bool) -> anyhow::Result<LiveFigures> {
    let (_db, _redis, mut settings) = crate::settings::fresh().await?;
    settings.projector.poll_interval_ms = Millis::of(20);
    let store = Store::connect(&settings.redis)?;
    let board = BoardId::parse(BOARD)?;
    generation::seal_new(
        &store,
        &board,
        Order::of(Sort::Descending, TieBreak::UserId),
    )
    .await?;
    let min_interval = settings.api.live_min_interval_ms.ms();
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?
    };
    let room = (clients + 100).to_string();
    let mut env = crate::settings::daemon_env(&settings);
    env.extend([
        ("LEDGERBOARD__API__LISTEN", addr.to_string()),
        ("LEDGERBOARD__API__ADMIN_LISTEN", "127.0.0.1:0".to_owned()),
        ("LEDGERBOARD__AUTH__TOKENS", test_tokens()),
        ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "0".to_owned()),
        ("LEDGERBOARD__API__MAX_CONNECTIONS", room.clone()),
        ("LEDGERBOARD__API__MAX_CONNECTIONS_PER_CLIENT", room.clone()),
        ("LEDGERBOARD__API__LIVE_MAX_CONNECTIONS", room.clone()),
        ("LEDGERBOARD__API__LIVE_MAX_PER_CLIENT", room),
    ]);
    let mut api = std::process::Command::new(binary("ledgerboard-api")?)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting ledgerboard-api")?;
    let cancel = CancellationToken::new();
    let replica = start_replica(&settings, &cancel)?;
    let result = measure(addr, api.id(), clients, quick, min_interval).await;
    let _ = api.kill();
    let _ = api.wait();
    cancel.cancel();
    let _ = replica.1.await;
    result
}

async fn measure(
    addr: SocketAddr,
    pid: u32,
    clients: usize,
    quick: bool,
    min_interval: u64,
) -> anyhow::Result<LiveFigures> {
    let started = Instant::now();
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(30),
            "the api did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    post(addr, "seed").await?;
    let counts = Arc::new(Counts::default());
    let stop = CancellationToken::new();
    let mut tasks = Vec::with_capacity(clients);
    // One stream first: the hub and the subscriber exist, so the rest measures streams only.
    tasks.push(tokio::spawn(client(addr, counts.clone(), stop.clone())));
    wait_messages(&counts, 1, Duration::from_secs(30)).await?;
    let rss_one = rss_mb(pid)?;
    let connecting = Instant::now();
    for _ in 1..clients {
        tasks.push(tokio::spawn(client(addr, counts.clone(), stop.clone())));
    }
    wait_messages(&counts, clients as u64, Duration::from_secs(300)).await?;
    let connect_seconds = connecting.elapsed().as_secs_f64();
    let rss_all = rss_mb(pid)?;

    // One change at a time: a new first entry each time, so every client gets one message.
    // Each after a pause of the hub's minimum interval, so that the figure is a lone change's
    // way through (projector, pub/sub, the hub's read, the fan-out), not the coalescing wait.
    let changes = if quick { 5 } else { 20 };
    let mut fanout = Vec::with_capacity(changes);
    for i in 0..changes {
        tokio::time::sleep(Duration::from_millis(min_interval)).await;
        let before = counts.messages.load(Ordering::Relaxed);
        post(addr, &format!("leader-{}", i % 3)).await?;
        let answered = Instant::now();
        wait_messages(&counts, before + clients as u64, Duration::from_secs(60)).await?;
        fanout.push(answered.elapsed().as_secs_f64() * 1000.0);
    }
    fanout.sort_by(f64::total_cmp);

    // Back to back for a few seconds.
    let burst = Duration::from_secs(if quick { 3 } else { 10 });
    let (m0, b0) = (
        counts.messages.load(Ordering::Relaxed),
        counts.bytes.load(Ordering::Relaxed),
    );
    let burst_started = Instant::now();
    let mut burst_commands = 0u64;
    while burst_started.elapsed() < burst {
        post(addr, &format!("burst-{}", burst_commands % 7)).await?;
        burst_commands += 1;
    }
    let burst_seconds = burst_started.elapsed().as_secs_f64();
    let messages = counts.messages.load(Ordering::Relaxed) - m0;
    let bytes = counts.bytes.load(Ordering::Relaxed) - b0;
    stop.cancel();
    for t in tasks {
        let _ = t.await;
    }
    Ok(LiveFigures {
        clients_wanted: clients,
        clients,
        open_files_limit: None,
        connect_seconds,
        rss_one_mb: rss_one,
        rss_all_mb: rss_all,
        bytes_per_stream: (rss_all - rss_one) * 1024.0 * 1024.0 / clients.max(2) as f64,
        fanout_p50_ms: fanout[fanout.len() / 2],
        fanout_max_ms: fanout.last().copied().unwrap_or(0.0),
        changes,
        burst_seconds,
        burst_commands,
        messages_per_s: messages as f64 / burst_seconds,
        bytes_per_s: bytes as f64 / burst_seconds,
        min_interval_ms: min_interval,
        projector: Vec::new(),
    })
}

fn rss_mb(pid: u32) -> anyhow::Result<f64> {
    status_kb(pid, "VmRSS")
        .map(|kb| kb as f64 / 1024.0)
        .context("the api's VmRSS")
}

async fn wait_messages(counts: &Counts, at_least: u64, limit: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    while counts.messages.load(Ordering::Relaxed) < at_least {
        anyhow::ensure!(
            started.elapsed() < limit,
            "{} of {at_least} messages after {limit:?}",
            counts.messages.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// A score command: `user` adds the largest delta an undeclared board takes, which makes it
/// the leader (ties go to the greater user id, and the users take turns).
async fn post(addr: SocketAddr, user: &str) -> anyhow::Result<()> {
    let body = format!(
        r#"{{"event_id":"{}","user_id":"{user}","delta":1000}}"#,
        uuid::Uuid::new_v4()
    );
    let bearer = format!("Bearer {TEST_TOKEN}");
    let (status, answer) = ledgerboard_harness::http::request(
        addr,
        "POST",
        &format!("/v1/boards/{BOARD}/scores"),
        &[("authorization", &bearer)],
        body,
        Duration::from_secs(10),
    )
    .await?;
    anyhow::ensure!((200..300).contains(&status), "command: {status} {answer}");
    Ok(())
}

/// One stream on a raw socket: counts each message (a block with a `data:` line) and its
/// bytes; heartbeats are not messages.
async fn client(addr: SocketAddr, counts: Arc<Counts>, stop: CancellationToken) {
    let Ok(mut socket) = tokio::net::TcpStream::connect(addr).await else {
        return;
    };
    let request = format!("GET /v1/boards/{BOARD}/live HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    if socket.write_all(request.as_bytes()).await.is_err() {
        return;
    }
    let mut buf = vec![0u8; 16 * 1024];
    // Bytes of a block not yet ended, carried over between reads (only whether it holds
    // `data:` matters).
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = tokio::select! {
            _ = stop.cancelled() => return,
            n = socket.read(&mut buf) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
        };
        counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
        tail.extend_from_slice(&buf[..n]);
        while let Some(end) = tail.windows(2).position(|w| w == b"\n\n") {
            if tail[..end].windows(6).any(|w| w == b"\ndata:") {
                counts.messages.fetch_add(1, Ordering::Relaxed);
            }
            tail.drain(..end + 2);
        }
    }
}

impl LiveFigures {
    pub fn table(&self) -> String {
        let mut out = String::from("## Live updates\n\n");
        out.push_str(&format!(
            "SSE streams on one api process: {} (asked {}, open-files limit {}), opened in {:.1} s; \
             `api.live_min_interval_ms` = {} ms.\n\n\
             | figure | value |\n|---|---|\n\
             | api RSS with 1 stream | {:.1} MB |\n\
             | api RSS with all streams | {:.1} MB |\n\
             | memory per stream | {:.0} bytes |\n\
             | one change to every client, p50 | {:.0} ms |\n\
             | one change to every client, max ({} changes) | {:.0} ms |\n\
             | commands back to back | {} in {:.1} s |\n\
             | messages delivered | {:.0} /s ({:.1} MB/s) |\n\n",
            self.clients,
            self.clients_wanted,
            self.open_files_limit
                .map_or_else(|| "unknown".to_owned(), |l| l.to_string()),
            self.connect_seconds,
            self.min_interval_ms,
            self.rss_one_mb,
            self.rss_all_mb,
            self.bytes_per_stream,
            self.fanout_p50_ms,
            self.changes,
            self.fanout_max_ms,
            self.burst_commands,
            self.burst_seconds,
            self.messages_per_s,
            self.bytes_per_s / 1e6,
        ));
        out.push_str(
            "Projector drain of a sealed board, 1 replica, every row a new leader:\n\n\
             | events.top_n | rows | rows/s | rank.top_changed events |\n|---|---|---|---|\n",
        );
        for d in &self.projector {
            out.push_str(&format!(
                "| {} | {} | {:.0} | {} |\n",
                d.top_n, d.rows, d.rows_per_s, d.events
            ));
        }
        out.push('\n');
        out
    }
}
