//! `lbctl`: the operator's tool. Parses the flags, loads the settings and runs one subcommand
//! (one module each; what they share is in `common.rs`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ledgerboard_core::daemon;

mod board;
mod common;
mod competition;
mod migrate;
mod moderation;
mod parked;
mod period;
mod rebuild;
mod review;
mod status;
mod token;
mod user;
mod webhook;

/// Operate a ledgerboard deployment: schema migrations, status, parked outbox rows, rebuilds.
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
    /// Outbox rows the projector gave up on after too many failed attempts.
    Parked {
        #[command(subcommand)]
        command: parked::ParkedCommand,
    },
    /// Rebuild one board's Redis projection from PostgreSQL while readers keep reading: build a
    /// new generation (the projector writes it too while it is built), switch atomically,
    /// delete the old one. Takes the reconciler lock (waits for a running pass).
    Rebuild {
        /// The board to rebuild.
        #[arg(long)]
        board: String,
        /// How long to wait for the reconciler lock, in seconds.
        #[arg(long, default_value_t = 120)]
        wait_secs: u64,
        /// Then run a reconciliation pass over the board under the same lock, and fail unless
        /// it completes (it finds nothing to repair unless the keys were edited meanwhile).
        #[arg(long)]
        verify: bool,
    },
    /// Board definitions: operator, sort, tie break, bounds, display name (PostgreSQL only; the
    /// api sees a change within `api.definition_cache_ms`).
    Board {
        // Boxed: its flags make it far larger than the other commands (clippy's
        // large_enum_variant).
        #[command(subcommand)]
        command: Box<board::BoardCommand>,
    },
    /// Periods of boards that reset: close one (freeze its standings), show its standings,
    /// verify them against their digest and the events.
    Period {
        #[command(subcommand)]
        command: period::PeriodCommand,
    },
    /// Moderate a user on every board: ban, unban, erase (idempotent by --id, audited).
    User {
        #[command(subcommand)]
        command: user::UserCommand,
    },
    /// Tournaments over a board: declare, list, show.
    Competition {
        #[command(subcommand)]
        command: competition::CompetitionCommand,
    },
    /// Scores held by their boards' review rules: list them, approve (apply) or reject them.
    Review {
        #[command(subcommand)]
        command: review::ReviewCommand,
    },
    /// Webhook subscriptions to the event log: create, list, show (lanes, parked, gaps),
    /// update, delete; their parked deliveries and requeue.
    Webhook {
        #[command(subcommand)]
        command: webhook::WebhookCommand,
    },
    /// Make bearer tokens for `auth.tokens` (only their SHA-256 digest goes into the settings),
    /// keys for `auth.player_keys` and player tokens for testing.
    Token {
        #[command(subcommand)]
        command: token::TokenCommand,
    },
}

fn main() -> ExitCode {
    daemon::main("lbctl", run)
}

async fn run(args: Args) -> anyhow::Result<()> {
    // Tokens are made without settings (and so without a database).
    if let Command::Token { command } = args.command {
        return token::run(command);
    }
    let settings = daemon::load_settings(args.daemon.config.as_deref())?;
    match args.command {
        Command::Token { .. } => Ok(()),
        Command::Migrate => migrate::run(&settings).await,
        Command::Status { json } => status::run(&settings, json).await,
        Command::Parked { command } => parked::run(&settings, command).await,
        Command::Board { command } => board::run(&settings, *command).await,
        Command::User { command } => user::run(&settings, command).await,
        Command::Period { command } => period::run(&settings, command).await,
        Command::Review { command } => review::run(&settings, command).await,
        Command::Competition { command } => competition::run(&settings, command).await,
        Command::Webhook { command } => webhook::run(&settings, command).await,
        Command::Rebuild {
            board,
            wait_secs,
            verify,
        } => rebuild::run(args.daemon.config.as_deref(), &board, wait_secs, verify).await,
    }
}
