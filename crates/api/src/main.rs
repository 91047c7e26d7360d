//! `ledgerboard-api`: parse flags, load settings, wait for PostgreSQL, serve, shut down.

use std::process::ExitCode;

use clap::Parser;
use ledgerboard_api::settings::Sections;
use ledgerboard_api::{AppState, drain_after, router, serve};
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
    let admin_addr = settings.api.admin_addr()?;
    ledgerboard_api::metrics::init_series();
    let Some(mut daemon) = Daemon::open(NAME, &settings, telemetry).await? else {
        return Ok(());
    };
    // SIGTERM makes the api unready at once (`/readyz` watches the shutdown token) and stops
    // it accepting `api.drain_delay_ms` later; the admin port answers until then.
    let stop_accepting = drain_after(daemon.cancel.clone(), settings.api.drain_delay());
    // Readiness does not need Redis: commands never touch it and reads fall back.
    let health = daemon
        .health(settings.api.readiness_stale())
        .await
        .redis_optional()
        .with_drain(daemon.cancel.clone());
    daemon
        .serve_admin_until(
            admin_addr,
            "api.admin_listen",
            health,
            stop_accepting.clone(),
        )
        .await?;
    let listener = daemon::bind(addr, "api.listen").await?;
    tracing::info!(addr = %listener.local_addr()?, "{NAME} started");
    daemon.spawn_outbox_gauges();
    let state = AppState::new(daemon.db.clone(), daemon.store.clone(), &settings);
    let app = router(state, &settings.api);
    let grace = settings.shutdown.grace();
    serve(listener, app, &settings.api, stop_accepting, grace).await?;
    daemon.stop().await;
    Ok(())
}
