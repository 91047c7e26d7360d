//! The load generator: keep-alive HTTP/1.1 connections that write a request and read its
//! whole answer, nothing more. redis-benchmark and pgbench are lean C clients; a general HTTP
//! client (an earlier version used hyper's) costs several times this per request on the same
//! two cores, which the ratio would then charge to the API.
//!
//! It runs on its own runtime with threads named `load`, so a profile (`perf report --sort
//! comm`) tells its CPU apart from the API's (`tokio-runtime-w`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cpu::{Cpu, Meter};

/// One request, ready to write: method, path, optional JSON body and bearer token.
pub fn request(method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\nhost: bench\r\n");
    if let Some(token) = token {
        out.push_str(&format!("authorization: Bearer {token}\r\n"));
    }
    if let Some(body) = body {
        out.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        out.push_str("\r\n");
    }
    out.into_bytes()
}

/// A keep-alive connection to the API.
pub struct Connection {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// One answer: status and body.
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Connection {
    pub async fn open(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
            .await
            .context("connecting to the API timed out")??;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// Writes `request` and reads its answer (bounded by 10 s: the load must stop by itself).
    pub async fn send(&mut self, request: &[u8]) -> anyhow::Result<Answer> {
        tokio::time::timeout(Duration::from_secs(10), self.exchange(request))
            .await
            .context("no answer from the API within 10 s")?
    }

    async fn exchange(&mut self, request: &[u8]) -> anyhow::Result<Answer> {
        self.stream.write_all(request).await?;
        self.buf.clear();
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head) = response.parse(&self.buf)? {
                let status = response.code.context("no status code")?;
                let mut length = None;
                for h in response.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length = Some(std::str::from_utf8(h.value)?.trim().parse::<usize>()?);
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        bail!("chunked answers are not read by this load generator");
                    }
                }
                let length = length.context("answer without content-length")?;
                while self.buf.len() < head + length {
                    self.read_more().await?;
                }
                ensure!(
                    self.buf.len() == head + length,
                    "more bytes than one answer"
                );
                return Ok(Answer {
                    status,
                    body: self.buf[head..].to_vec(),
                });
            }
            self.read_more().await?;
        }
    }

    async fn read_more(&mut self) -> anyhow::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await?;
        ensure!(n > 0, "the API closed the connection");
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

/// What a closed-loop run measured.
pub struct Closed {
    pub requests: u64,
    pub seconds: f64,
    /// Sorted, in milliseconds.
    pub latencies_ms: Vec<f64>,
    /// CPU seconds by process group over the run, its connections included (`cpu.rs`).
    pub cpu: Cpu,
}

impl Closed {
    pub fn per_s(&self) -> f64 {
        self.requests as f64 / self.seconds
    }

    /// CPU microseconds by process group per request.
    pub fn cpu_per_request(&self) -> Cpu {
        self.cpu.per(self.requests as f64)
    }

    /// Several runs as one: their requests, seconds, samples and CPU together.
    pub fn merge(runs: impl IntoIterator<Item = Closed>) -> Closed {
        let mut all = Closed {
            requests: 0,
            seconds: 0.0,
            latencies_ms: Vec::new(),
            cpu: Cpu::default(),
        };
        for r in runs {
            all.requests += r.requests;
            all.seconds += r.seconds;
            all.latencies_ms.extend(r.latencies_ms);
            all.cpu = all.cpu + r.cpu;
        }
        all.latencies_ms.sort_by(f64::total_cmp);
        all
    }

    pub fn percentile(&self, p: f64) -> f64 {
        percentile(&self.latencies_ms, p)
    }
}

/// `p` (0..=1) of sorted samples; 0 for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `clients` connections, each sending `next(client, i)` back to back for `duration`; every
/// answer must have status `expect`. Runs on its own two-thread runtime named `load`.
pub async fn closed_loop<F>(
    addr: SocketAddr,
    clients: usize,
    duration: Duration,
    expect: u16,
    next: F,
) -> anyhow::Result<Closed>
where
    F: Fn(usize, u64) -> Vec<u8> + Send + Sync + 'static,
{
    let next = std::sync::Arc::new(next);
    let meter = Meter::start();
    let mut run = on_load_runtime(async move {
        // Connect every client first, so the clock covers requests only.
        let mut connections = Vec::with_capacity(clients);
        for _ in 0..clients {
            connections.push(Connection::open(addr).await?);
        }
        let started = Instant::now();
        let deadline = started + duration;
        let mut tasks = Vec::with_capacity(clients);
        for (client, mut conn) in connections.into_iter().enumerate() {
            let next = next.clone();
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(64 * 1024);
                let mut i = 0;
                while Instant::now() < deadline {
                    let request = next(client, i);
                    i += 1;
                    let sent = Instant::now();
                    let answer = conn.send(&request).await?;
                    ensure!(
                        answer.status == expect,
                        "{}: {}",
                        answer.status,
                        String::from_utf8_lossy(&answer.body)
                    );
                    latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                }
                anyhow::Ok(latencies)
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await??);
        }
        let seconds = started.elapsed().as_secs_f64();
        ensure!(!all.is_empty(), "no request completed");
        all.sort_by(f64::total_cmp);
        Ok(Closed {
            requests: all.len() as u64,
            seconds,
            latencies_ms: all,
            cpu: Cpu::default(),
        })
    })
    .await?;
    // After the load runtime ended: its threads' CPU is counted as it ends.
    run.cpu = meter.stop();
    Ok(run)
}

/// Runs `work` on the load generator's own runtime (two threads named `load`), apart from
/// the API's, and waits for it without blocking the caller's runtime.
pub async fn on_load_runtime<T: Send + 'static>(
    work: impl Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("load")
            .enable_all()
            .build()?;
        let out = runtime.block_on(work);
        // Counted while its threads are still there: CPU per unit of work keeps the load
        // generator's apart from the API's (`crate::cpu`).
        crate::cpu::add_load_threads();
        out
    })
    .await?
}
