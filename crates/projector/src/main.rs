//! `ledgerboard-projector`: parse flags, load settings, wait for PostgreSQL, project the outbox
//! into Redis until SIGTERM.

use std::process::ExitCode;

use clap::Parser;
use ledgerboard_core::daemon::{self, Daemon};
use ledgerboard_projector::Projector;
use ledgerboard_projector::settings::Sections;

const NAME: &str = "ledgerboard-projector";

/// mimalloc, as the api (the workspace's Cargo.toml says why).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// ledgerboard's projector: applies the outbox to the Redis leaderboards. Run as many
/// replicas as the load needs.
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
    let admin_addr = settings.projector.admin_addr()?;
    ledgerboard_projector::metrics::init();
    let Some(mut daemon) = Daemon::open(NAME, &settings, telemetry).await? else {
        return Ok(());
    };
    let health = daemon.health(settings.projector.readiness_stale()).await;
    daemon
        .serve_admin(admin_addr, "projector.admin_listen", health)
        .await?;
    daemon.spawn_outbox_gauges();
    let (mode, workers) = (settings.projector.mode, settings.projector.workers.get());
    let projector = Projector::new(settings, daemon.db.clone(), daemon.store.clone());
    projector.check_redis().await?;
    tracing::info!(?mode, workers, "{NAME} started");
    projector.run(daemon.cancel.clone()).await;
    daemon.stop().await;
    Ok(())
}
