//! `ledgerboard-api`: parse flags, load settings, wait for PostgreSQL, serve, shut down.

use std::process::ExitCode;

use clap::Parser;
use ledgerboard_api::settings::Sections;
use ledgerboard_api::{AppState, drain_after, router, serve};
use ledgerboard_core::daemon::{self, Daemon};
use tokio_util::sync::CancellationToken;

const NAME: &str = "ledgerboard-api";

/// mimalloc, not glibc's malloc: see the workspace's Cargo.toml (measured in
/// docs/performance.md, Reads).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    // Live streams never end by themselves: they end when the server stops accepting, so the
    // graceful shutdown below is not held up by them and their clients reconnect elsewhere.
    state.live.stop_on(stop_accepting.clone());
    // The event log's sequencer and retention, which feed the long polls of GET /v1/events:
    // until the server has stopped, so that polls still in flight while it drains are woken.
    let stop_events = CancellationToken::new();
    let upkeep = state.start_event_upkeep(&settings, stop_events.clone())?;
    let app = router(state, &settings.api);
    let grace = settings.shutdown.grace();
    serve(listener, app, &settings.api, stop_accepting, grace).await?;
    stop_events.cancel();
    // It ends at its next await point; a failure there was logged already.
    let _ = upkeep.await;
    daemon.stop().await;
    Ok(())
}
