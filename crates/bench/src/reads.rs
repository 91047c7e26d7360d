//! Top-100 reads per second through the API (in this process, on a real socket, keep-alive
//! HTTP/1.1 clients of [`crate::load`]) against redis-benchmark running `ZREVRANGE key 0 99 WITHSCORES` on the
//! same sorted set at the same concurrency.

use std::time::Duration;

use crate::settings::Settings;
use anyhow::Context;
use ledgerboard_core::domain::BoardId;
use ledgerboard_core::projection::Store;
use serde::Serialize;

use crate::api::Stack;
use crate::load;

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
    let stack = Stack::start(64).await?;
    let client = stack.db.client().await;
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 'top', 'player-' || g, (g * 7919) % 100003, 1 FROM generate_series(1, $1::bigint) g",
            &[&users],
        )
        .await?;
    let store = Store::connect(&stack.settings.redis)?;
    let key = store.keys().scores(&BoardId::parse("top")?);
    {
        let rows = client
            .query("SELECT user_id, score FROM user_scores", &[])
            .await?;
        let mut conn = store.connection().await?;
        for chunk in rows.chunks(1_000) {
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(&key);
            for r in chunk {
                zadd.arg(r.get::<_, i64>(1)).arg(r.get::<_, String>(0));
            }
            let _: () = zadd.query_async(&mut conn).await?;
        }
    }

    let mut figures = Vec::new();
    for clients in [16, 64] {
        eprintln!("top-100 reads with {clients} clients");
        let run = load::closed_loop(
            stack.addr,
            clients,
            Duration::from_secs_f64(seconds),
            200,
            |_, _| load::request("GET", "/v1/boards/top/top?limit=100", None, None),
        )
        .await?;
        let redis_benchmark_per_s = redis_benchmark(
            &stack.settings,
            &key,
            clients,
            (run.requests as usize).max(10_000),
        )?;
        figures.push(ReadFigures {
            clients,
            seconds: run.seconds,
            requests: run.requests,
            per_s: run.per_s(),
            p50_ms: run.percentile(0.5),
            p99_ms: run.percentile(0.99),
            redis_benchmark_per_s,
        });
    }
    stack.stop().await?;
    Ok(figures)
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
