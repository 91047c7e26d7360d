//! `ledgerboard-bench`: measures ledgerboard against what PostgreSQL and Redis alone do on the
//! same machine, in the same run, on fresh databases and namespaces, and writes the ratios.
//! Everything it loads goes to the local servers (127.0.0.1) and stops by itself.

mod api;
mod attempts;
mod boards;
mod commands;
mod competitions;
mod cpu;
mod events;
mod growth;
mod kinds;
mod latency;
mod live;
mod load;
mod memory;
mod periods;
mod pgbench;
mod players;
mod plot;
mod projector;
mod ranks;
mod reads;
mod reconciler;
mod redis_benchmark;
mod report;
mod settings;
mod webhooks;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// The api's allocator (`crates/api/src/main.rs`), as the api runs in this process.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Only these sections (all when not given); `latency` needs `commands`, whose capacity
    /// it loads a fraction of.
    #[arg(long, value_delimiter = ',')]
    only: Vec<Section>,
    /// Only these parts of the growth section (all when not given): it takes about 45 min.
    #[arg(long, value_delimiter = ',')]
    growth: Vec<growth::Part>,
    /// Where the report goes.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Section {
    Commands,
    Latency,
    Projector,
    Reconciler,
    Reads,
    Memory,
    Boards,
    Kinds,
    Ranks,
    Periods,
    Growth,
    Events,
    /// SSE fan-out of one api process and `rank.top_changed`'s cost to the projector
    /// (`live.rs`).
    Live,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    // The daemons' telemetry, so that the figures include its cost: every metric recorded,
    // and the request and batch spans created (at info, as in a daemon), with the rest of
    // the logs kept to warnings, written as JSON as the Kubernetes configmap has them (the
    // JSON layer formats every span's fields, which costs more than the human format).
    let log = ledgerboard_core::config::LogSettings {
        filter: "warn,ledgerboard_api::observe=info,ledgerboard_projector::worker=info".into(),
        format: ledgerboard_core::config::LogFormat::Json,
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
    let want = |s: Section| args.only.is_empty() || args.only.contains(&s);
    anyhow::ensure!(
        !want(Section::Latency) || want(Section::Commands),
        "--only latency needs commands too: it loads a fraction of their capacity"
    );
    let (quick, out) = (args.quick, &args.out);
    let commands = if want(Section::Commands) {
        Some(commands::run(quick, out).await?)
    } else {
        None
    };
    let latency = match &commands {
        Some(c) if want(Section::Latency) => Some(latency::run(quick, c.capacity(), out).await?),
        _ => None,
    };
    let projector = section(want(Section::Projector), projector::run(quick, out)).await?;
    let reconciler = section(want(Section::Reconciler), reconciler::run(quick)).await?;
    let reads = section(want(Section::Reads), reads::run(quick)).await?;
    let memory = section(want(Section::Memory), memory::run(quick)).await?;
    let boards = section(want(Section::Boards), boards::run(quick)).await?;
    let kinds = section(want(Section::Kinds), kinds::run(quick)).await?;
    let ranks = section(want(Section::Ranks), ranks::run(quick)).await?;
    let periods = section(want(Section::Periods), periods::run(quick)).await?;
    let growth = section(want(Section::Growth), growth::run(quick, &args.growth)).await?;
    let events = section(want(Section::Events), events::run(quick, out)).await?;
    let live = section(want(Section::Live), live::run(quick)).await?;
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
        kinds,
        ranks,
        periods,
        growth,
        events,
        live,
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

/// Runs a section if it is wanted.
async fn section<T>(
    wanted: bool,
    run: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<Option<T>> {
    Ok(if wanted { Some(run.await?) } else { None })
}
