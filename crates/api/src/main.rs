//! `ledgerboard-api`: parse flags, load settings, wait for PostgreSQL, serve, shut down.

use std::process::ExitCode;

use clap::Parser;
use ledgerboard_api::settings::Sections;
use ledgerboard_api::{AppState, router, serve};
use ledgerboard_core::daemon::{self, Daemon};

const NAME: &str = "ledgerboard-api";

/// ledgerboard's HTTP daemon: idempotent score commands and leaderboard reads that say how
/// fresh they are.
#[derive(Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    daemon: daemon::DaemonArgs,
}

fn main() -> ExitCode {
    daemon::main(NAME, run)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let (settings, telemetry) = daemon::start::<Sections>(NAME, args.daemon.config.as_deref())?;
    let addr = settings.api.listen_addr()?;
    ledgerboard_api::metrics::init_series();
    let Some(mut daemon) = Daemon::open(NAME, &settings, telemetry).await? else {
        return Ok(());
    };
    let listener = daemon::bind(addr, "api.listen").await?;
    tracing::info!(addr = %listener.local_addr()?, "{NAME} started");
    daemon.spawn_outbox_gauges();
    // Readiness does not need Redis: commands never touch it and reads fall back. The admin
    // routes share the api's port.
    let health = daemon.health().redis_optional();
    let state = AppState::new(daemon.db.clone(), daemon.store.clone(), &settings);
    let app = router(state, &settings.api).merge(health.routes());
    let grace = settings.shutdown.grace();
    serve(listener, app, &settings.api, daemon.cancel.clone(), grace).await?;
    daemon.stop().await;
    Ok(())
}
