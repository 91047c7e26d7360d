//! `ledgerboard-reconciler`: parse flags, load settings, wait for PostgreSQL, then either run
//! passes on a schedule until SIGTERM or (`--once`) run one pass and print its report.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ledgerboard_core::daemon::{self, Daemon};
use ledgerboard_core::model::BoardId;
use ledgerboard_reconciler::Reconciler;
use ledgerboard_reconciler::pass::PassOptions;
use ledgerboard_reconciler::settings::Sections;

const NAME: &str = "ledgerboard-reconciler";

/// ledgerboard's reconciler: finds drift between PostgreSQL and the Redis leaderboards
/// (missing, stale, ahead, corrupt, orphan) and repairs it. One replica works at a time.
#[derive(Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    daemon: daemon::DaemonArgs,
    /// Run one pass, print its report as JSON on stdout, and exit (0 when the pass completed,
    /// whatever it found).
    #[arg(long)]
    once: bool,
    /// With --once: classify and report, repair nothing.
    #[arg(long, requires = "once")]
    dry_run: bool,
    /// With --once: only this board.
    #[arg(long, requires = "once")]
    board: Option<String>,
    /// With --once: also repair rows whose projection is ahead of the source.
    #[arg(long, requires = "once")]
    repair_ahead: bool,
}

fn main() -> ExitCode {
    daemon::main(NAME, run)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let (settings, telemetry) = daemon::start::<Sections>(NAME, args.daemon.config.as_deref())?;
    let admin_addr = settings.reconciler.admin_addr()?;
    let board = args
        .board
        .as_deref()
        .map(BoardId::parse_stored)
        .transpose()
        .context("--board")?;
    let Some(mut daemon) = Daemon::open(NAME, &settings, telemetry).await? else {
        anyhow::ensure!(!args.once, "interrupted before the pass started");
        return Ok(());
    };
    let mut options = PassOptions::from_settings(&settings.reconciler);
    options.dry_run = args.dry_run;
    options.board = board;
    options.repair_ahead |= args.repair_ahead;
    let interval = settings.reconciler.interval();
    let readiness_stale = settings.reconciler.readiness_stale();
    let reconciler = Reconciler::new(settings, daemon.db.clone(), daemon.store.clone());
    if args.once {
        let report = tokio::select! {
            report = reconciler.run_once(&options) => report?,
            _ = daemon.cancel.cancelled() => anyhow::bail!("interrupted before the pass completed"),
        };
        report.log();
        println!("{}", serde_json::to_string_pretty(&report)?);
        daemon.close().await;
        return match report.aborted {
            None => Ok(()),
            Some(reason) => Err(anyhow::anyhow!("the pass did not complete: {reason}")),
        };
    }
    ledgerboard_reconciler::metrics::init_series();
    let health = daemon
        .health(readiness_stale)
        .await
        .with_lock(reconciler.lock_held());
    daemon
        .serve_admin(admin_addr, "reconciler.admin_listen", health)
        .await?;
    daemon.spawn_outbox_gauges();
    tracing::info!(?interval, "{NAME} started");
    reconciler.run(daemon.cancel.clone()).await;
    daemon.stop().await;
    Ok(())
}
