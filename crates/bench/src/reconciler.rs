//! Reconciliation and rebuild of a large board, run as the real binaries
//! (`ledgerboard-reconciler --once`, `lbctl rebuild`) so their peak memory can be read, against
//! a plain SELECT of the same rows plus a pipelined ZSCORE/HGET of them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cpu::{Cpu, Meter};
use crate::settings::Settings;
use anyhow::Context;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Run {
    pub seconds: f64,
    pub rows_per_s: f64,
    pub peak_rss_mb: f64,
    /// CPU per row (µs by process: the binary under `tools`).
    pub cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct ReconcilerFigures {
    pub users: i64,
    pub rebuild: Run,
    /// Of the rebuild: the build alone (its report's `build_seconds`), the rest being the
    /// process's start, the switch and the unlink.
    pub rebuild_build_seconds: f64,
    pub pass: Run,
    /// The same pass over a board a tenth the size: memory should not follow size.
    pub small_board_users: i64,
    pub small_board_pass: Run,
    /// SELECT of the rows plus pipelined ZSCORE/HGET of them, one after the other.
    pub limit_seconds: f64,
    pub limit_rows_per_s: f64,
    /// CPU per row of the limit (µs: its client is this process, `ours`).
    pub limit_cpu_us: Cpu,
}

pub async fn run(quick: bool) -> anyhow::Result<ReconcilerFigures> {
    let users: i64 = if quick { 20_000 } else { 1_000_000 };
    let small = users / 10;
    let (db, _redis, settings) = crate::settings::fresh().await?;
    let client = db.client().await;
    seed_boards(&client, &[("big", users), ("small", small)]).await?;
    let env = crate::settings::daemon_env(&settings);

    eprintln!("rebuild of a {users}-user board");
    let (rebuild, report) = measure(
        &binary("lbctl")?,
        &["rebuild", "--board", "big"],
        &env,
        users,
    )?;
    // The build and the switch: the pass below is what checks it (lbctl's --verify would
    // run the same pass inside the rebuild).
    let rebuild_build_seconds = report["build_seconds"].as_f64().unwrap_or(f64::NAN);
    eprintln!(
        "  {:.1} s: build {:.1} s",
        rebuild.seconds, rebuild_build_seconds
    );
    measure(
        &binary("lbctl")?,
        &["rebuild", "--board", "small"],
        &env,
        small,
    )?;
    eprintln!("reconciliation pass over it");
    let (pass, report) = measure(
        &binary("ledgerboard-reconciler")?,
        &["--once", "--board", "big"],
        &env,
        users,
    )?;
    anyhow::ensure!(
        report["totals"]["current"].as_i64() == Some(users),
        "the rebuilt board is not all current: {}",
        report["totals"]
    );
    let (small_board_pass, _) = measure(
        &binary("ledgerboard-reconciler")?,
        &["--once", "--board", "small"],
        &env,
        small,
    )?;

    eprintln!("limit: SELECT plus pipelined ZSCORE/HGET");
    let meter = Meter::start();
    let limit_seconds = limit(&client, &settings, users).await?;
    let limit_cpu_us = meter.stop().per(users as f64);
    Ok(ReconcilerFigures {
        users,
        rebuild,
        rebuild_build_seconds,
        pass,
        small_board_users: small,
        small_board_pass,
        limit_seconds,
        limit_rows_per_s: users as f64 / limit_seconds,
        limit_cpu_us,
    })
}

/// Source rows `player-000000000001` … for each `(board, users)`, scores spread over a million
/// values, versions 1 to 5; then vacuumed and checkpointed, so that neither lands on the clock
/// of what is measured next (the vacuum leaves about 100 MB of dirty pages per million rows; a
/// long-running board is not freshly vacuumed).
pub(crate) async fn seed_boards(
    client: &tokio_postgres::Client,
    boards: &[(&str, i64)],
) -> anyhow::Result<()> {
    for (board, users) in boards {
        client
            .execute(
                "INSERT INTO user_scores (board_id, user_id, score, version)
                 SELECT $1, 'player-' || lpad(g::text, 12, '0'), (g * 7919) % 1000003, 1 + g % 5
                 FROM generate_series(1::bigint, $2::bigint) AS g",
                &[board, users],
            )
            .await?;
    }
    client.batch_execute("VACUUM ANALYZE user_scores").await?;
    client.batch_execute("CHECKPOINT").await?;
    Ok(())
}

/// A field of `/proc/<pid>/status` given in kB (`VmHWM`, `VmRSS`), None once the process is gone.
pub(crate) fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A binary of this workspace, built beside this one.
pub(crate) fn binary(name: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::current_exe()?
        .parent()
        .map(Path::to_path_buf)
        .context("no directory for the bench binary")?;
    let path = dir.join(name);
    anyhow::ensure!(
        path.exists(),
        "{} not built (cargo build --bins)",
        path.display()
    );
    Ok(path)
}

/// Runs a binary to its end, sampling its peak resident memory (VmHWM) while it runs, and
/// returns its figures and the JSON it printed.
pub(crate) fn measure(
    binary: &Path,
    args: &[&str],
    env: &[(&str, String)],
    rows: i64,
) -> anyhow::Result<(Run, serde_json::Value)> {
    // Output goes to files, not pipes: a report larger than a pipe's buffer (one entry per
    // board) would block the process until someone read it.
    let stdout_path = std::env::temp_dir().join(format!("bench-{}.out", uuid::Uuid::new_v4()));
    let stderr_path = stdout_path.with_extension("err");
    let meter = Meter::start();
    let started = Instant::now();
    let mut child = std::process::Command::new(binary)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::fs::File::create(&stdout_path)?)
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let mut peak_kb = 0_u64;
    let status = loop {
        if let Some(kb) = status_kb(child.id(), "VmHWM") {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let seconds = started.elapsed().as_secs_f64();
    let cpu = meter.stop();
    let stdout = std::fs::read(&stdout_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stdout_path);
    let _ = std::fs::remove_file(&stderr_path);
    anyhow::ensure!(
        status.success(),
        "{} {args:?} failed: {stderr}",
        binary.display()
    );
    let json = serde_json::from_slice(&stdout).unwrap_or(serde_json::Value::Null);
    Ok((
        Run {
            seconds,
            rows_per_s: rows as f64 / seconds,
            peak_rss_mb: peak_kb as f64 / 1024.0,
            cpu_us: cpu.per(rows as f64),
        },
        json,
    ))
}

/// The work a pass cannot avoid: read every source row, and read every member's score and
/// version from Redis in pipelines of 1,000.
async fn limit(
    client: &tokio_postgres::Client,
    settings: &Settings,
    users: i64,
) -> anyhow::Result<f64> {
    let started = Instant::now();
    let rows = client
        .query(
            "SELECT user_id, score, version FROM user_scores WHERE board_id = 'big'",
            &[],
        )
        .await?;
    anyhow::ensure!(rows.len() as i64 == users);
    let store = Store::connect(&settings.redis)?;
    let board = BoardId::parse("big")?;
    let (z, v) = (store.keys().scores(&board), store.keys().versions(&board));
    let mut conn = store.connection().await?;
    for chunk in rows.chunks(1_000) {
        let mut pipe = redis::pipe();
        for row in chunk {
            let user: &str = row.get(0);
            pipe.cmd("ZSCORE")
                .arg(&z)
                .arg(user)
                .cmd("HGET")
                .arg(&v)
                .arg(user);
        }
        let _: Vec<Option<String>> = pipe.query_async(&mut conn).await?;
    }
    Ok(started.elapsed().as_secs_f64())
}
