//! Top-100 reads per second through the API (in this process, on a real socket, keep-alive
//! HTTP/1.1 clients) against redis-benchmark running `ZREVRANGE key 0 99 WITHSCORES` on the
//! same sorted set at the same concurrency.

use std::time::{Duration, Instant};

use anyhow::Context;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use ledgerboard_api::{AppState, router, serve};
use ledgerboard_core::cache::Cache;
use ledgerboard_core::config::Settings;
use ledgerboard_core::db::{Database, migrate};
use ledgerboard_core::domain::BoardId;
use ledgerboard_testkit::{TestDb, TestRedis};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Serialize)]
pub struct ReadFigures {
    pub clients: usize,
    pub seconds: f64,
    pub requests: u64,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub redis_benchmark_per_s: f64,
}

pub async fn run(quick: bool) -> anyhow::Result<Vec<ReadFigures>> {
    let users: i64 = 10_000;
    let seconds = if quick { 1.0 } else { 8.0 };
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    let mut settings = Settings::default();
    settings.database.url = db.url.clone();
    settings.redis.namespace = redis.namespace.clone();
    settings.database.pool_max_size = 32;
    settings.redis.pool_max_size = 64;
    // Every load client comes from one address: the per-address limit would measure itself.
    settings.api.rate_limit_per_s = 0;
    migrate(&settings.database).await?;
    let client = db.client().await;
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 'top', 'player-' || g, (g * 7919) % 100003, 1 FROM generate_series(1, $1::bigint) g",
            &[&users],
        )
        .await?;
    let cache = Cache::connect(&settings.redis)?;
    let board = BoardId::parse("top")?;
    let key = cache.keys().scores(&board);
    {
        let rows = client
            .query("SELECT user_id, score FROM user_scores", &[])
            .await?;
        let mut conn = cache.connection().await?;
        for chunk in rows.chunks(1_000) {
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(&key);
            for r in chunk {
                zadd.arg(r.get::<_, i64>(1)).arg(r.get::<_, String>(0));
            }
            let _: () = zadd.query_async(&mut conn).await?;
        }
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = router(
        AppState::new(
            Database::connect(&settings.database, "bench-api")?,
            cache,
            &settings,
        ),
        &settings.api,
    );
    let stop = CancellationToken::new();
    let server = tokio::spawn({
        let api = settings.api.clone();
        let stop = stop.clone();
        async move { serve(listener, app, &api, stop, Duration::from_secs(1)).await }
    });

    let mut figures = Vec::new();
    for clients in [16, 64] {
        eprintln!("top-100 reads with {clients} clients");
        let (requests, latencies_ms, secs) =
            load(addr, clients, Duration::from_secs_f64(seconds)).await?;
        let redis_benchmark_per_s =
            redis_benchmark(&settings, &key, clients, (requests as usize).max(10_000))?;
        let pct = |p: f64| latencies_ms[((latencies_ms.len() - 1) as f64 * p).round() as usize];
        figures.push(ReadFigures {
            clients,
            seconds: secs,
            requests,
            per_s: requests as f64 / secs,
            p50_ms: pct(0.5),
            p99_ms: pct(0.99),
            redis_benchmark_per_s,
        });
    }
    stop.cancel();
    server.await??;
    Ok(figures)
}

/// `clients` keep-alive connections, each sending GET top?limit=100 back to back for
/// `duration`; every answer must be 200.
async fn load(
    addr: std::net::SocketAddr,
    clients: usize,
    duration: Duration,
) -> anyhow::Result<(u64, Vec<f64>, f64)> {
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for _ in 0..clients {
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await?;
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(conn);
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let request = hyper::Request::get("/v1/boards/top/top?limit=100")
                    .header("host", "bench")
                    .body(Empty::<Bytes>::new())?;
                let sent = Instant::now();
                let response = sender.send_request(request).await?;
                let status = response.status();
                let body = response.into_body().collect().await?.to_bytes();
                anyhow::ensure!(
                    status == 200,
                    "{status}: {}",
                    String::from_utf8_lossy(&body)
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
    let secs = started.elapsed().as_secs_f64();
    all.sort_by(f64::total_cmp);
    anyhow::ensure!(!all.is_empty(), "no request completed");
    Ok((all.len() as u64, all, secs))
}

fn redis_benchmark(
    settings: &Settings,
    key: &str,
    clients: usize,
    requests: usize,
) -> anyhow::Result<f64> {
    let url = url::Url::parse(&settings.redis.url)?;
    let output = std::process::Command::new("redis-benchmark")
        .args(["-h", url.host_str().unwrap_or("127.0.0.1")])
        .args(["-p", &url.port().unwrap_or(6379).to_string()])
        .args([
            "-c",
            &clients.to_string(),
            "-n",
            &requests.to_string(),
            "-q",
        ])
        .args(["ZREVRANGE", key, "0", "99", "WITHSCORES"])
        .output()
        .context("running redis-benchmark (apt-get install redis-tools)")?;
    let text = String::from_utf8_lossy(&output.stdout);
    // "ZREVRANGE …: 45045.04 requests per second, p50=…" (the last \r-separated line)
    text.split(['\r', '\n'])
        .filter_map(|l| l.split(": ").nth(1))
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|v| v.parse::<f64>().ok())
        .next_back()
        .with_context(|| format!("no rate in redis-benchmark output: {text:?}"))
}
