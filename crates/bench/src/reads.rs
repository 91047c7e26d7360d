//! Top-100 reads per second through the API (in this process, on a real socket, keep-alive
//! HTTP/1.1 clients of [`crate::load`]) against redis-benchmark running `ZREVRANGE key 0 99 WITHSCORES` on the
//! same sorted set at the same concurrency. The board is sealed by the real rebuild and the
//! run checks that the API answers from the projection before it measures (before this check,
//! the board was written with ZADD alone, had no seal, and every read fell back to PostgreSQL).

use std::time::Duration;

use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use serde::Serialize;

use crate::api::Stack;
use crate::cpu::{Cpu, Meter};
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
    /// CPU per read (µs by process: `ours` is the api).
    pub cpu_us: Cpu,
    /// CPU per redis-benchmark request (Redis; redis-benchmark under `tools`).
    pub redis_benchmark_cpu_us: Cpu,
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
    stack.rebuild("top")?;
    let key = Store::connect(&stack.settings.redis)?
        .keys()
        .scores(&BoardId::parse("top")?);
    let top = || load::request("GET", "/v1/boards/top/top?limit=100", None, None);
    stack.answered_by_projection("top-100", &top()).await?;

    let mut figures = Vec::new();
    for clients in [16, 64] {
        eprintln!("top-100 reads with {clients} clients");
        let run = load::closed_loop(
            stack.addr,
            clients,
            Duration::from_secs_f64(seconds),
            200,
            move |_, _| top(),
        )
        .await?;
        let cpu = run.cpu_per_request();
        let requests = (run.requests as usize).max(10_000);
        let meter = Meter::start();
        let redis_benchmark_per_s = crate::redis_benchmark::rate(
            stack.settings.redis.url.as_str(),
            clients,
            requests,
            None,
            &["ZREVRANGE", &key, "0", "99", "WITHSCORES"],
        )?;
        let redis_benchmark_cpu_us = meter.stop().per(requests as f64);
        figures.push(ReadFigures {
            clients,
            seconds: run.seconds,
            requests: run.requests,
            per_s: run.per_s(),
            p50_ms: run.percentile(0.5),
            p99_ms: run.percentile(0.99),
            redis_benchmark_per_s,
            cpu_us: cpu,
            redis_benchmark_cpu_us,
        });
    }
    stack.stop().await?;
    Ok(figures)
}
