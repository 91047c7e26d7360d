//! Periods (issue 22): what a manual reset costs the commands in flight on the board (the
//! longest command latency of a run across the reset, against the same run without one), and
//! what closing a large period costs (freezing its standings with their digest) and verifying
//! it. The period is seeded in PostgreSQL directly (1M entries; 20,000 in a quick run), then
//! commands go through the API on the real socket.

use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::board::periods::{self, CloseOutcome};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::BoardId;
use serde::Serialize;

use crate::api::Stack;
use crate::commands::command;
use crate::cpu::Cpu;
use crate::load::{self, percentile};

const BOARD: &str = "season";
const CLIENTS: usize = 16;

/// One closed-loop run of commands on the board.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// CPU per command by process group (µs).
    pub cpu_us: Cpu,
}

#[derive(Debug, Clone, Serialize)]
pub struct PeriodsFigures {
    pub clients: usize,
    pub seconds: f64,
    /// Entries seeded into the first period, and the seconds the seed took.
    pub seeded: u64,
    pub seed_seconds: f64,
    /// The same load without a reset, then with one half-way.
    pub without_reset: Run,
    pub across_reset: Run,
    /// The same load while the ended period is closed (it starts a second in).
    pub close_load_seconds: f64,
    pub during_close: Run,
    /// Entries the close froze (the seed and the commands of the first period).
    pub closed_entries: i64,
    pub close_seconds: f64,
    pub verify_seconds: f64,
}

fn run_of(closed: &load::Closed) -> Run {
    Run {
        per_s: closed.per_s(),
        p50_ms: closed.percentile(0.5),
        p99_ms: closed.percentile(0.99),
        max_ms: percentile(&closed.latencies_ms, 1.0),
        cpu_us: closed.cpu_per_request(),
    }
}

async fn load(stack: &Stack, seconds: f64) -> anyhow::Result<load::Closed> {
    load::closed_loop(
        stack.addr,
        CLIENTS,
        Duration::from_secs_f64(seconds),
        201,
        |_, _| command(BOARD, "delta", |random| (random % 100 + 1) as i64),
    )
    .await
}

pub async fn run(quick: bool) -> anyhow::Result<PeriodsFigures> {
    let (seeded, seconds, close_load_seconds) = if quick {
        // Not shorter: the reset comes half-way, and the next period opens at the next whole
        // second, which must fall inside the load (else the close load still writes to the
        // first period and the close finds it pending: a 1 s run failed so).
        (10_000_u64, 2.0, 3.0)
    } else {
        (1_000_000, 6.0, 60.0)
    };
    eprintln!("periods: a manual reset under load, and the close of a {seeded}-entry period");
    let stack = Stack::start(CLIENTS + 4).await?;
    stack
        .declare(BOARD, r#"{"operator":"add","reset":"manual"}"#)
        .await?;
    let db = Database::connect(&stack.settings.database, "bench-periods")?;
    let client = stack.db.client().await;
    let first: String = client
        .query_one(
            "SELECT lb_period_id(min(starts_at)) FROM board_resets WHERE board_id = $1",
            &[&BOARD],
        )
        .await?
        .get(0);
    let started = Instant::now();
    // The entry counts' trigger updates one of 16 rows per entry: in one transaction of a
    // million rows each update walks the versions the earlier ones left (minutes). Seeded
    // with triggers off, the counts are written once after, as migration V5 counted the
    // boards it found.
    client
        .batch_execute("SET session_replication_role = replica")
        .await?;
    client
        .execute(
            // Each entry with the event a command would have recorded: the verification
            // checks every frozen row against its user's newest event.
            "WITH e AS (
                 INSERT INTO score_events
                     (event_id, board_id, user_id, submitted, operator, score, version)
                 SELECT gen_random_uuid(), $1 || '~' || $2, 'seeded-' || g,
                        (g * 7919) % 100000, 'add', (g * 7919) % 100000, 1
                 FROM generate_series(1, $3::bigint) AS g
                 RETURNING board_id, user_id, score, version)
             INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT board_id, user_id, score, version FROM e",
            &[&BOARD, &first, &(seeded as i64)],
        )
        .await
        .context("seeding the first period")?;
    client
        .batch_execute(&format!(
            "SET session_replication_role = DEFAULT;
             INSERT INTO board_entry_counts (board_id, shard, entries)
             SELECT board_id, hashtext(user_id) & 15, count(*) FROM user_scores
             WHERE board_id = '{BOARD}~{first}' GROUP BY 1, 2;
             ANALYZE user_scores; ANALYZE score_events;"
        ))
        .await?;
    let seed_seconds = started.elapsed().as_secs_f64();

    let without_reset = run_of(&load(&stack, seconds).await?);
    // The same load, with a reset half-way (by the database clock the next period opens at
    // the next whole second, inside the run).
    let board = BoardId::parse(BOARD)?;
    let reset = {
        let (db, board) = (db.clone(), board.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs_f64(seconds / 2.0)).await;
            periods::reset(&db, &board, "bench").await
        })
    };
    let across_reset = run_of(&load(&stack, seconds).await?);
    let opened = reset.await??.context("the board resets")?;
    anyhow::ensure!(opened.period > first, "the reset opened no later period");
    // The new period opens at the next whole second by the database clock: on a loaded machine
    // that may be after the load above ended. Every command of the close load must land in it
    // (a command still landing in the first period would leave it pending at the close).
    ledgerboard_harness::wait::wait_until(Duration::from_secs(10), || async {
        periods::current(&db, &board)
            .await
            .ok()
            .flatten()
            .is_some_and(|p| p.current == opened.period)
    })
    .await
    .with_context(|| format!("period {} did not open within 10 s", opened.period))?;

    // No projector runs here: the first period's outbox rows are marked projected, as the
    // projector would, so that the close measures itself.
    client
        .execute(
            "UPDATE leaderboard_outbox SET published_at = now()
             WHERE board_id = $1 || '~' || $2 AND published_at IS NULL",
            &[&BOARD, &first],
        )
        .await?;
    // The close runs while commands keep coming (they land in the new period): it starts a
    // second into a load long enough to cover it.
    let close = {
        let (db, board, first) = (db.clone(), board.clone(), first.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let started = Instant::now();
            let outcome = periods::close(&db, &board, &first).await;
            (outcome, started.elapsed().as_secs_f64())
        })
    };
    // At least `close_load_seconds`, and on until a second after the close ends, so that the
    // close never outlasts the load that measures commands during it (on a loaded machine a
    // quick run's close took 2.6 s of a 3 s load).
    let mut slices = vec![load(&stack, close_load_seconds).await?];
    while !close.is_finished() {
        slices.push(load(&stack, 1.0).await?);
    }
    slices.push(load(&stack, 1.0).await?);
    let merged = load::Closed::merge(slices);
    let close_load_seconds = merged.seconds;
    let during_close = run_of(&merged);
    let (outcome, close_seconds) = close.await?;
    let closed = match outcome? {
        CloseOutcome::Closed(c) => c,
        other => anyhow::bail!("closing the first period: {other:?}"),
    };
    let started = Instant::now();
    let verified = periods::verify(&db, &board, &first)
        .await?
        .context("the period is closed")?;
    let verify_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        verified.holds(),
        "the frozen standings do not hold: {verified:?}"
    );
    db.close();
    stack.stop().await?;
    Ok(PeriodsFigures {
        clients: CLIENTS,
        seconds,
        seeded,
        seed_seconds,
        without_reset,
        across_reset,
        close_load_seconds,
        during_close,
        closed_entries: closed.entries,
        close_seconds,
        verify_seconds,
    })
}
