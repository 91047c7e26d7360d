//! `lbchaos`: the consistency contract checked against the real servers, with the daemons as
//! processes. Not an operator's tool (that is `lbctl`): it creates databases, runs its own
//! daemons and `redis-server`, and kills them.

mod chaos;
mod experiment;
mod stack;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ledgerboard_core::daemon;

/// Check the consistency contract: the reference failure experiment, or commands under
/// injected faults. Each run has a database and a Redis namespace of its own.
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
    /// Run the reference failure experiment (duplicate command, stopped projector, a hand
    /// edit in Redis, reconciliation) on a database and Redis namespace of its own, with the
    /// daemons as processes; print the table and exit non-zero if a stage breaks the
    /// contract. Needs the daemon binaries next to lbchaos and a role with CREATEDB.
    Experiment {
        /// Where the markdown report goes.
        #[arg(long, default_value = "target/experiment")]
        out: std::path::PathBuf,
    },
    /// Send thousands of commands through the api while injecting faults (projectors killed,
    /// all stopped for a backlog, Redis flushed, crashed or restarted, PostgreSQL sessions
    /// terminated, Redis data corrupted), then drain, compare every board with PostgreSQL
    /// before any reconciliation pass, reconcile once and check the contract against
    /// PostgreSQL and Redis. Runs on a database and a redis-server of its own; exits non-zero on any mismatch.
    Chaos {
        /// Seconds of load and faults.
        #[arg(long, default_value_t = 180, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        duration_secs: u64,
        /// Concurrent clients.
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256))]
        clients: u64,
        /// Projector processes.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=32))]
        projectors: u64,
        /// Seed of the random choices (clients and faults); printed at the start and in the
        /// report.
        #[arg(long)]
        seed: Option<u64>,
        /// Fault kinds to inject, comma-separated (default: every kind).
        #[arg(long, value_enum, value_delimiter = ',')]
        faults: Vec<chaos::Fault>,
        /// Where the markdown report goes.
        #[arg(long, default_value = "target/chaos")]
        out: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    daemon::main("lbchaos", run)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let settings = daemon::load_settings(args.daemon.config.as_deref())?;
    match args.command {
        Command::Experiment { out } => experiment::run(&settings, &out).await,
        Command::Chaos {
            duration_secs,
            clients,
            projectors,
            seed,
            faults,
            out,
        } => {
            let options = chaos::Options {
                duration: std::time::Duration::from_secs(duration_secs),
                clients: clients as usize,
                projectors: projectors as usize,
                seed: seed.unwrap_or_else(chaos::default_seed),
                out,
                faults,
            };
            chaos::run(&settings, options).await
        }
    }
}
