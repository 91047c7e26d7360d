//! `ledgerboard-api`: parse flags, load settings, wait for PostgreSQL, serve, shut down.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ledgerboard_api::{AppState, router, serve};
use ledgerboard_core::{daemon, shutdown};

/// ledgerboard's HTTP daemon: score commands and leaderboard reads.
///
/// Settings come from built-in defaults, then the file given by --config, then environment
/// variables LEDGERBOARD__<SECTION>__<NAME> (see docs/configuration.md).
#[derive(Parser)]
#[command(version)]
struct Args {
    /// A TOML settings file.
    #[arg(long, env = "LEDGERBOARD_CONFIG")]
    config: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "ledgerboard-api stopped");
            eprintln!("ledgerboard-api: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let settings = daemon::load_settings(args.config.as_deref())?;
    let addr = settings.api.listen_addr()?;
    let cancel = shutdown::on_signal();
    let Some(db) = daemon::open_database(&settings, "ledgerboard-api", &cancel).await? else {
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (api.listen)"))?;
    tracing::info!(addr = %listener.local_addr()?, "ledgerboard-api listening");
    let app = router(AppState { db: db.clone() }, &settings.api);
    serve(listener, app, cancel, settings.shutdown.grace()).await?;
    db.close();
    tracing::info!("ledgerboard-api stopped");
    Ok(())
}
