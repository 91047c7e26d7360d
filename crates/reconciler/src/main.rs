//! `ledgerboard-reconciler`: finds and repairs drift between PostgreSQL and the Redis leaderboards.
//!
//! So far it starts (settings, PostgreSQL with the right schema, Redis), waits for SIGTERM and
//! stops cleanly; its work arrives with its own issue.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ledgerboard_core::cache::Cache;
use ledgerboard_core::{daemon, shutdown};

const NAME: &str = "ledgerboard-reconciler";

/// ledgerboard's reconciler: finds and repairs drift between PostgreSQL and the Redis leaderboards.
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
    if let Err(e) = cache.ping().await {
        // Redis may come up after us; the work loop retries, so this is not fatal.
        tracing::warn!(url = cache.url_for_logs(), error = %e, "Redis does not answer yet");
    }
    tracing::info!("{NAME} started");
    cancel.cancelled().await;
    db.close();
    tracing::info!("{NAME} stopped");
    Ok(())
}
