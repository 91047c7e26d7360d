//! `ledgerboard-api`: parse flags, load settings, wait for PostgreSQL, serve, shut down.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ledgerboard_api::settings::Sections;
use ledgerboard_api::{AppState, router, serve};
use ledgerboard_core::daemon::admin::Health;
use ledgerboard_core::daemon::outbox_gauges;
use ledgerboard_core::projection::Store;
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
    let (settings, telemetry) = daemon::start::<Sections>(NAME, args.daemon.config.as_deref())?;
    let addr = settings.api.listen_addr()?;
    let cancel = shutdown::on_signal();
    ledgerboard_api::metrics::init_series();
    let Some(db) = daemon::open_database(&settings, NAME, &cancel).await? else {
        return Ok(());
    };
    let store = Store::connect(&settings.redis).context("redis.url")?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (api.listen)"))?;
    tracing::info!(addr = %listener.local_addr()?, "{NAME} started");
    let sampler = outbox_gauges::spawn(
        db.clone(),
        settings.telemetry.outbox_sample_interval(),
        cancel.clone(),
    );
    // Readiness does not need Redis: commands never touch it and reads fall back.
    let health = Health::new(telemetry.registry(), db.clone(), store.clone()).redis_optional();
    let app =
        router(AppState::new(db.clone(), store, &settings), &settings.api).merge(health.routes());
    serve(
        listener,
        app,
        &settings.api,
        cancel,
        settings.shutdown.grace(),
    )
    .await?;
    sampler.abort();
    db.close();
    telemetry.shutdown().await;
    tracing::info!("ledgerboard-api stopped");
    Ok(())
}
