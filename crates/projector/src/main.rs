//! `ledgerboard-projector`: parse flags, load settings, wait for PostgreSQL, project the outbox
//! into Redis until SIGTERM.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ledgerboard_core::daemon::admin::{self, Health};
use ledgerboard_core::daemon::outbox_gauges;
use ledgerboard_core::projection::Store;
use ledgerboard_core::{daemon, shutdown};
use ledgerboard_projector::Projector;
use ledgerboard_projector::settings::Sections;

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
    let (settings, telemetry) = daemon::start::<Sections>(NAME, args.daemon.config.as_deref())?;
    let admin_addr = settings.projector.admin_addr()?;
    let cancel = shutdown::on_signal();
    ledgerboard_projector::metrics::init();
    let Some(db) = daemon::open_database(&settings, NAME, &cancel).await? else {
        return Ok(());
    };
    let store = Store::connect(&settings.redis).context("redis.url")?;
    let health = Health::new(telemetry.registry(), db.clone(), store.clone());
    let (_, admin) = admin::serve(admin_addr, health, cancel.clone())
        .await
        .with_context(|| format!("cannot listen on {admin_addr} (projector.admin_listen)"))?;
    let sampler = outbox_gauges::spawn(
        db.clone(),
        settings.telemetry.outbox_sample_interval(),
        cancel.clone(),
    );
    let mode = settings.projector.mode;
    let workers = settings.projector.workers.get();
    let projector = Projector::new(settings, db.clone(), store);
    projector.check_redis().await?;
    tracing::info!(?mode, workers, "{NAME} started");
    projector.run(cancel).await;
    sampler.abort();
    admin.abort();
    db.close();
    telemetry.shutdown().await;
    tracing::info!("{NAME} stopped");
    Ok(())
}
