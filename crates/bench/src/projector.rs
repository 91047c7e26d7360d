//! Projector throughput, against PostgreSQL running the same
//! claim-and-mark SQL (pgbench) and Redis running the projection script alone.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::settings::Settings;
use anyhow::Context;
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::db::{Database, migrate, outbox};
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::apply_batch;
use ledgerboard_projector::Projector;
use ledgerboard_projector::metrics::Counters;
use ledgerboard_testkit::{TestDb, TestRedis, seed_outbox};
use serde::Serialize;

use crate::cpu::{Cpu, Meter};
use crate::pgbench;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

const BOARD: &str = "bench";
const BATCH: usize = 500;

#[derive(Debug, Serialize)]
pub struct Throughput {
    pub clients: usize,
    pub rows_per_s: f64,
    /// CPU per row (µs by process): pgbench under `tools` for claim-and-mark, this process
    /// (the script's caller) under `ours` for the script alone.
    pub cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct Drain {
    pub replicas: usize,
    pub seconds: f64,
    pub rows_per_s: f64,
    /// CPU per row (µs by process: `ours` is the projector replicas).
    pub cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct ProjectorFigures {
    pub backlog_rows: i64,
    pub users: i64,
    pub batch_size: usize,
    pub claim_and_mark: Vec<Throughput>,
    pub script_alone: Vec<Throughput>,
    pub limit_rows_per_s: f64,
    pub drains: Vec<Drain>,
}

pub async fn run(quick: bool, out: &Path) -> anyhow::Result<ProjectorFigures> {
    let rows: i64 = if quick { 20_000 } else { 200_000 };
    let users = rows / 20;
    let db = TestDb::create().await;
    let mut settings = Settings::default();
    settings.database.url = db.url.as_str().into();
    settings.projector.batch_size = const { Count::of(BATCH) };
    settings.projector.poll_interval_ms = Millis::of(100);
    migrate(&settings.database).await?;
    let client = db.client().await;
    seed_outbox(&client, BOARD, users, rows).await;

    eprintln!("limit: pgbench claim-and-mark");
    let script = out.join("claim-and-mark.sql");
    std::fs::write(&script, pgbench_script()?)?;
    let mut claim_and_mark = Vec::new();
    for clients in [1, 4] {
        reset_outbox(&client).await?;
        let transactions = (rows as usize).div_ceil(BATCH).div_ceil(clients);
        let meter = Meter::start();
        let tps = pgbench::run_counted(&db.url, &script, clients, transactions)?;
        let cpu = meter.stop();
        claim_and_mark.push(Throughput {
            clients,
            rows_per_s: tps * BATCH as f64,
            cpu_us: cpu.per(rows as f64),
        });
    }

    eprintln!("limit: projection script alone");
    reset_outbox(&client).await?;
    let entries = {
        let d = Database::connect(&settings.database, "bench")?;
        let c = d.client().await?;
        let claimed = outbox::claim(&c, d.statements(), rows as usize).await?;
        claimed
            .into_iter()
            .filter_map(|c| c.entry.ok())
            .collect::<Vec<_>>()
    };
    let mut script_alone = Vec::new();
    for clients in [1, 4] {
        let redis = TestRedis::new();
        settings.redis.namespace = redis.namespace.clone();
        let store = Store::connect(&settings.redis)?;
        // Reversed, as `pop` takes from the end: batches go in outbox order, so most rows
        // are applied, as the projector applies them. (In reverse, the newest version of
        // each member came first and the 19 older ones were cheap stale refusals: the limit
        // measured 4 µs of Redis per row against the projector's 15–18.)
        let chunks: Vec<_> = entries.chunks(BATCH).rev().map(<[_]>::to_vec).collect();
        let queue = Arc::new(Mutex::new(chunks));
        let meter = Meter::start();
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let (queue, store) = (queue.clone(), store.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let Some(chunk) = queue.lock().await.pop() else {
                        return Ok(());
                    };
                    apply_batch(&store, &chunk, Duration::from_secs(3600)).await?;
                }
            }));
        }
        for t in tasks {
            t.await?
                .map_err(|e: ledgerboard_core::projection::Outage| anyhow::anyhow!(e))?;
        }
        let secs = started.elapsed().as_secs_f64();
        let cpu = meter.stop();
        script_alone.push(Throughput {
            clients,
            rows_per_s: entries.len() as f64 / secs,
            cpu_us: cpu.per(entries.len() as f64),
        });
    }
    let best = |v: &[Throughput]| v.iter().map(|t| t.rows_per_s).fold(0.0, f64::max);
    let limit_rows_per_s = best(&claim_and_mark).min(best(&script_alone));

    let mut drains = Vec::new();
    for replicas in [1, 2, 4] {
        eprintln!("projector drain with {replicas} replica(s)");
        reset_outbox(&client).await?;
        let redis = TestRedis::new();
        settings.redis.namespace = redis.namespace.clone();
        let cancel = CancellationToken::new();
        let meter = Meter::start();
        let started = Instant::now();
        let handles: Vec<_> = (0..replicas)
            .map(|_| start_replica(&settings, &cancel))
            .collect::<anyhow::Result<_>>()?;
        wait_delivered(&handles, rows as u64, Duration::from_secs(600)).await?;
        let secs = started.elapsed().as_secs_f64();
        let cpu = meter.stop();
        cancel.cancel();
        for (_, h) in handles {
            h.await?;
        }
        anyhow::ensure!(
            pending(&client).await? == 0,
            "rows left pending after the drain"
        );
        drains.push(Drain {
            replicas,
            seconds: secs,
            rows_per_s: rows as f64 / secs,
            cpu_us: cpu.per(rows as f64),
        });
    }

    Ok(ProjectorFigures {
        backlog_rows: rows,
        users,
        batch_size: BATCH,
        claim_and_mark,
        script_alone,
        limit_rows_per_s,
        drains,
    })
}

/// The projector's own SQL, one batch per transaction: claim (rows go back to the client),
/// then mark the same rows published (they are locked by this transaction, so the repeated
/// claim finds exactly them), then commit.
fn pgbench_script() -> anyhow::Result<String> {
    let claim = outbox::CLAIM.sql().replace("$1", &BATCH.to_string());
    let claim = pgbench::strip_comments(&claim);
    // The same claim, returning only the ids: its select list is replaced, whatever it is.
    let select = claim.find("SELECT ").context("the claim is not a SELECT")?;
    let from = select
        + claim[select..]
            .find("FROM ")
            .context("the claim has no FROM")?;
    let ids = format!("{}SELECT id {}", &claim[..select], &claim[from..]);
    // Transactional mode: no lease owner ($2 is NULL).
    let publish = pgbench::strip_comments(outbox::PUBLISH.sql())
        .replace("$1::bigint[]", &format!("ARRAY({ids})"))
        .replace("$2::text", "NULL::text");
    Ok(format!("BEGIN;\n{claim};\n{publish};\nCOMMIT;\n"))
}

pub(crate) async fn reset_outbox(client: &tokio_postgres::Client) -> anyhow::Result<()> {
    client
        .batch_execute(
            "UPDATE leaderboard_outbox SET published_at = NULL, lease_owner = NULL, lease_expires_at = NULL",
        )
        .await
        .context("resetting the outbox")?;
    // Separately: VACUUM cannot run in the implicit transaction of a multi-statement batch.
    client
        .batch_execute("VACUUM ANALYZE leaderboard_outbox")
        .await
        .context("vacuuming the outbox")
}

/// A projector replica in this process; its counters tell when the drain is done, so the
/// measurement itself puts no load on PostgreSQL.
pub fn start_replica(
    settings: &Settings,
    cancel: &CancellationToken,
) -> anyhow::Result<(Arc<Counters>, tokio::task::JoinHandle<()>)> {
    let db = Database::connect(&settings.database, "bench-projector")?;
    let store = Store::connect(&settings.redis)?;
    let projector = Projector::new(settings.clone(), db, store);
    let counters = projector.counters();
    Ok((counters, tokio::spawn(projector.run(cancel.clone()))))
}

pub(crate) async fn wait_delivered(
    replicas: &[(Arc<Counters>, tokio::task::JoinHandle<()>)],
    rows: u64,
    limit: Duration,
) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let delivered: u64 = replicas.iter().map(|(s, _)| s.snapshot().delivered()).sum();
        if delivered >= rows {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < limit,
            "the outbox did not drain in {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn pending(client: &tokio_postgres::Client) -> anyhow::Result<i64> {
    Ok(client
        .query_one(
            "SELECT count(*) FROM leaderboard_outbox WHERE published_at IS NULL AND parked_at IS NULL",
            &[],
        )
        .await?
        .get(0))
}
