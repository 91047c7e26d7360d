//! `ledgerboard-bench`: measures ledgerboard against what PostgreSQL and Redis alone do on the
//! same machine, in the same run, on fresh databases and namespaces, and writes the ratios.
//! Everything it loads goes to the local servers (127.0.0.1) and stops by itself.

mod api;
mod boards;
mod commands;
mod latency;
mod load;
mod memory;
mod pgbench;
mod plot;
mod projector;
mod reads;
mod reconciler;
mod report;
mod settings;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Benchmarks against the hardware's own limits (pgbench, a pipelined Redis client).
#[derive(Parser)]
struct Args {
    /// A short run (well under a minute) that keeps the harness working; figures are rough.
    #[arg(long)]
    quick: bool,
    /// Run without the daemons' telemetry (no metrics recorded, no spans), to measure what it
    /// costs by comparison with a normal run.
    #[arg(long)]
    without_telemetry: bool,
    /// Where the report goes.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    // The daemons' telemetry, so that the figures include its cost: every metric recorded,
    // and the request and batch spans created (at info, as in a daemon), with the rest of
    // the logs kept to warnings.
    let log = ledgerboard_core::config::LogSettings {
        filter: "warn,ledgerboard_api::observe=info,ledgerboard_projector::worker=info".into(),
        ..Default::default()
    };
    let _telemetry = if args.without_telemetry {
        ledgerboard_core::telemetry::init_logging(&ledgerboard_core::config::LogSettings {
            filter: "warn".into(),
            ..Default::default()
        });
        None
    } else {
        let settings = ledgerboard_core::config::TelemetrySettings::default();
        match ledgerboard_core::telemetry::init("ledgerboard-bench", &log, &settings) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("ledgerboard-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ledgerboard-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.out)?;
    let machine = report::Machine::read().await?;
    let commands = commands::run(args.quick, &args.out).await?;
    let latency = latency::run(args.quick, commands.capacity(), &args.out).await?;
    let projector = projector::run(args.quick, &args.out).await?;
    let reconciler = reconciler::run(args.quick).await?;
    let reads = reads::run(args.quick).await?;
    let memory = memory::run(args.quick).await?;
    let boards = boards::run(args.quick).await?;
    let report = report::Report {
        quick: args.quick,
        telemetry: !args.without_telemetry,
        machine,
        commands,
        latency,
        projector,
        reconciler,
        reads,
        memory,
        boards,
    };
    let markdown = report.markdown();
    std::fs::write(args.out.join("report.md"), &markdown)?;
    std::fs::write(
        args.out.join("report.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    println!("{markdown}");
    println!("written to {}", args.out.join("report.md").display());
    Ok(())
}
