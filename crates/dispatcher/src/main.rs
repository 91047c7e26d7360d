//! `ledgerboard-dispatcher`: parse flags, load settings, wait for PostgreSQL, deliver the event
//! log to webhook subscriptions until SIGTERM.

use std::process::ExitCode;

use clap::Parser;
use ledgerboard_core::daemon::{self, Daemon};
use ledgerboard_dispatcher::Dispatcher;
use ledgerboard_dispatcher::settings::Sections;

const NAME: &str = "ledgerboard-dispatcher";

/// ledgerboard's webhook dispatcher: delivers the event log to subscribed receivers, signed,
/// at least once, in order per board. Run as many replicas as the load needs.
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
    let admin_addr = settings.dispatcher.admin_addr()?;
    ledgerboard_dispatcher::metrics::init();
    let Some(mut daemon) = Daemon::open(NAME, &settings, telemetry).await? else {
        return Ok(());
    };
    // Redis is not the dispatcher's: its readiness is PostgreSQL's.
    let health = daemon
        .health(settings.dispatcher.readiness_stale())
        .await
        .redis_optional();
    daemon
        .serve_admin(admin_addr, "dispatcher.admin_listen", health)
        .await?;
    let d = &settings.dispatcher;
    let (workers, allow_http, allow_private_addresses) =
        (d.workers.get(), d.allow_http, d.allow_private_addresses);
    let dispatcher = Dispatcher::new(settings, daemon.db.clone())?;
    tracing::info!(
        workers,
        allow_http,
        allow_private_addresses,
        "{NAME} started"
    );
    dispatcher.run(daemon.cancel.clone()).await;
    daemon.stop().await;
    Ok(())
}
