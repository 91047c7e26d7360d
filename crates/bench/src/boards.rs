//! Many boards, on one Redis and on Redis Cluster: 10,005 boards with skewed traffic (5 hot
//! boards take 19 rows in 20, 10,000 cold boards one row each) drained by 2 projector
//! replicas, then one reconciliation pass over every board (the real binary), first against
//! the shared Redis, then against a local cluster of 3 masters and 3 replicas on the same cores.
//! Also how the boards spread over the masters, and what one small board costs in Redis.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::settings::Settings;
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::db::migrate;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::cluster_slot;
use ledgerboard_harness::RedisCluster;
use ledgerboard_testkit::{TestDb, TestRedis, seed_skewed_boards};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::cpu::{Cpu, Meter};
use crate::projector::{reset_outbox, start_replica, wait_delivered};
use crate::reconciler::{binary, measure};

const REPLICAS: usize = 2;
const HOT: i64 = 5;
const HOT_USERS: i64 = 200;

#[derive(Debug, Serialize)]
pub struct ModeFigures {
    /// `single` or `cluster`.
    pub mode: String,
    pub drain_seconds: f64,
    pub drain_rows_per_s: f64,
    /// CPU per drained row (µs by process: the replicas run in this process, `ours`).
    pub drain_cpu_us: Cpu,
    pub pass_seconds: f64,
    pub pass_boards: u64,
    /// CPU per board the pass visited (µs by process: the reconciler under `tools`).
    pub pass_cpu_us_per_board: Cpu,
}

#[derive(Debug, Serialize)]
pub struct BoardsFigures {
    pub rows: i64,
    /// One row in this many is a cold board's.
    pub cold_every: i64,
    pub boards: i64,
    pub replicas: usize,
    pub modes: Vec<ModeFigures>,
    /// Boards per cluster master (by the slot of their hash tag), largest first.
    pub boards_per_master: Vec<u64>,
    /// Sorted set plus version hash of a one-member board (`MEMORY USAGE … SAMPLES 0`, mean of
    /// 100 cold boards), event marker excluded.
    pub one_member_board_bytes: f64,
}

pub async fn run(quick: bool) -> anyhow::Result<BoardsFigures> {
    // 10,000 cold boards (1,000 quick), one row in 20 (10 quick); the rest to the hot boards.
    let (rows, cold_every): (i64, i64) = if quick { (10_000, 10) } else { (200_000, 20) };
    let db = TestDb::create().await;
    let mut settings = Settings::default();
    settings.database.url = db.url.as_str().into();
    settings.projector.batch_size = Count::of(500);
    settings.projector.poll_interval_ms = Millis::of(100);
    migrate(&settings.database).await?;
    let client = db.client().await;
    seed_skewed_boards(&client, rows, cold_every, HOT, HOT_USERS).await;
    let boards: i64 = client
        .query_one("SELECT count(DISTINCT board_id) FROM user_scores", &[])
        .await?
        .get(0);

    let mut modes = Vec::new();
    let single = TestRedis::new();
    settings.redis.url = single.url.as_str().into();
    settings.redis.namespace = single.namespace.clone();
    eprintln!("{boards} boards on one Redis");
    modes.push(drain_and_pass("single", &settings, &client, rows, boards).await?);
    let one_member_board_bytes = one_member_board(&settings).await?;

    eprintln!("{boards} boards on a Redis Cluster of 3 masters");
    let cluster = RedisCluster::start()?;
    settings.redis.url = cluster.seeds().join(",").into();
    settings.redis.cluster = true;
    reset_outbox(&client).await?;
    modes.push(drain_and_pass("cluster", &settings, &client, rows, boards).await?);

    // Which master serves each board, from the slot ranges the cluster reports.
    let masters: Vec<_> = cluster
        .topology()?
        .into_iter()
        .filter(|n| n.master)
        .collect();
    let keys = Store::connect(&settings.redis)?.keys().clone();
    let mut per_master: BTreeMap<String, u64> = BTreeMap::new();
    for row in client
        .query("SELECT DISTINCT board_id FROM user_scores", &[])
        .await?
    {
        let board = BoardId::parse(row.get(0))?;
        let slot = cluster_slot(&keys.scores(&board));
        if let Some(m) = masters
            .iter()
            .find(|m| m.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
        {
            *per_master.entry(m.id.clone()).or_default() += 1;
        }
    }
    let mut boards_per_master: Vec<u64> = per_master.into_values().collect();
    boards_per_master.sort_unstable_by(|a, b| b.cmp(a));

    Ok(BoardsFigures {
        rows,
        cold_every,
        boards,
        replicas: REPLICAS,
        modes,
        boards_per_master,
        one_member_board_bytes,
    })
}

async fn drain_and_pass(
    mode: &str,
    settings: &Settings,
    client: &tokio_postgres::Client,
    rows: i64,
    boards: i64,
) -> anyhow::Result<ModeFigures> {
    let cancel = CancellationToken::new();
    let meter = Meter::start();
    let started = Instant::now();
    let handles: Vec<_> = (0..REPLICAS)
        .map(|_| start_replica(settings, &cancel))
        .collect::<anyhow::Result<_>>()?;
    wait_delivered(&handles, rows as u64, Duration::from_secs(600)).await?;
    let drain_seconds = started.elapsed().as_secs_f64();
    let drain_cpu_us = meter.stop().per(rows as f64);
    cancel.cancel();
    for (_, h) in handles {
        h.await?;
    }
    let pending: i64 = client
        .query_one(
            "SELECT count(*) FROM leaderboard_outbox WHERE published_at IS NULL",
            &[],
        )
        .await?
        .get(0);
    anyhow::ensure!(pending == 0, "{pending} rows left unpublished ({mode})");

    let env = crate::settings::daemon_env(settings);
    // Measured per board (its CPU per unit below): a walk over many boards costs by board.
    let (pass, report) = measure(
        &binary("ledgerboard-reconciler")?,
        &["--once"],
        &env,
        boards,
    )?;
    let pass_boards = report["boards_visited"].as_u64().unwrap_or(0);
    anyhow::ensure!(
        pass_boards == boards as u64,
        "the pass visited {pass_boards} of {boards} boards ({mode})"
    );
    for class in ["missing", "stale", "ahead", "corrupt", "orphan"] {
        anyhow::ensure!(
            report["totals"][class].as_u64() == Some(0),
            "{mode}: the drained projection has {class} members: {}",
            report["totals"]
        );
    }
    Ok(ModeFigures {
        mode: mode.to_owned(),
        drain_seconds,
        drain_rows_per_s: rows as f64 / drain_seconds,
        drain_cpu_us,
        pass_seconds: pass.seconds,
        pass_boards,
        pass_cpu_us_per_board: pass.cpu_us,
    })
}

async fn one_member_board(settings: &Settings) -> anyhow::Result<f64> {
    let store = Store::connect(&settings.redis)?;
    let mut conn = store.connection().await?;
    let mut total = 0_u64;
    for i in 0..100 {
        let board = BoardId::parse(&format!("cold-{i:05}"))?;
        for key in [store.keys().scores(&board), store.keys().versions(&board)] {
            let bytes: u64 = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(key)
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut conn)
                .await?;
            total += bytes;
        }
    }
    Ok(total as f64 / 100.0)
}
