//! `lbctl`: the operator's tool.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use ledgerboard_core::config::Settings;
use ledgerboard_core::daemon;
use ledgerboard_core::db::{self, Database};

/// Operate a ledgerboard deployment: schema migrations and status.
#[derive(Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    daemon: daemon::DaemonArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Apply the schema migrations this lbctl carries (idempotent; safe to run concurrently).
    Migrate,
    /// Show the schema version and the outbox: pending rows, parked rows, oldest pending age.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    daemon::exit("lbctl", run(args).await.map_err(|e| format!("{e:#}")))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let settings = daemon::load_settings(args.daemon.config.as_deref())?;
    match args.command {
        Command::Migrate => migrate(&settings).await,
        Command::Status { json } => status(&settings, json).await,
    }
}

async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    let report = db::migrate(&settings.database)
        .await
        .context("lbctl migrate")?;
    if report.applied.is_empty() {
        println!("schema is up to date at version {}", report.after);
    } else {
        for name in &report.applied {
            println!("applied {name}");
        }
        println!("schema is now at version {}", report.after);
    }
    Ok(())
}

async fn status(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let db = Database::connect(&settings.database, "lbctl")?;
    let schema = db::check_schema(&db)
        .await
        .context("reading the schema version")?;
    let outbox = if schema.applied.is_some() {
        Some(db::outbox_status(&db).await.context("reading the outbox")?)
    } else {
        None
    };
    if json {
        let value = serde_json::json!({ "schema": schema, "outbox": outbox });
        println!("{value}");
    } else {
        match schema.applied {
            Some(v) => println!("schema:  version {v} (this lbctl knows {})", schema.known),
            None => println!("schema:  none applied (run `lbctl migrate`)"),
        }
        if let Some(o) = outbox {
            let age = o
                .oldest_pending_age_ms
                .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
            println!(
                "outbox:  {} pending, {} parked, oldest pending {age}",
                o.pending, o.parked
            );
        }
    }
    db.close();
    Ok(())
}
