//! `ledgerboard-projector`: parse flags, load settings, wait for PostgreSQL, project the outbox
//! into Redis until SIGTERM.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ledgerboard_core::cache::Cache;
use ledgerboard_core::{daemon, shutdown};
use ledgerboard_projector::Projector;

const NAME: &str = "ledgerboard-projector";

/// ledgerboard's projector: applies the outbox to the Redis leaderboards. Run as many
/// replicas as the load needs.
#[derive(Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    daemon: daemon::DaemonArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    daemon::exit(NAME, run(args).await.map_err(|e| format!("{e:#}")))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let settings = daemon::load_settings(args.daemon.config.as_deref())?;
    let cancel = shutdown::on_signal();
    let Some(db) = daemon::open_database(&settings, NAME, &cancel).await? else {
        return Ok(());
    };
    let cache = Cache::connect(&settings.redis).context("redis.url")?;
    let mode = settings.projector.mode;
    let workers = settings.projector.workers;
    let projector = Projector::new(settings, db.clone(), cache);
    projector.check_redis().await?;
    tracing::info!(?mode, workers, "{NAME} started");
    projector.run(cancel).await;
    db.close();
    tracing::info!("{NAME} stopped");
    Ok(())
}
