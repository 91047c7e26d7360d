//! `ledgerboard-api`: parse flags, load settings, wait for PostgreSQL, serve, shut down.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ledgerboard_api::{AppState, router, serve};
use ledgerboard_core::cache::Cache;
use ledgerboard_core::{daemon, shutdown};

const NAME: &str = "ledgerboard-api";

/// ledgerboard's HTTP daemon: idempotent score commands and leaderboard reads that say how
/// fresh they are.
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
    let addr = settings.api.listen_addr()?;
    let cancel = shutdown::on_signal();
    let Some(db) = daemon::open_database(&settings, NAME, &cancel).await? else {
        return Ok(());
    };
    let cache = Cache::connect(&settings.redis).context("redis.url")?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (api.listen)"))?;
    tracing::info!(addr = %listener.local_addr()?, "{NAME} started");
    let app = router(
        AppState::new(db.clone(), cache, &settings.api),
        &settings.api,
    );
    serve(listener, app, cancel, settings.shutdown.grace()).await?;
    db.close();
    tracing::info!("ledgerboard-api stopped");
    Ok(())
}
