//! `lbctl parked list|requeue`: outbox rows the projector gave up on.

use clap::Subcommand;
use ledgerboard_core::config::Settings;
use ledgerboard_core::db::outbox;

use crate::common;

#[derive(Subcommand)]
pub enum ParkedCommand {
    /// List parked rows, oldest first, with their last error.
    List {
        /// Show at most this many rows.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Put parked rows back in the projector's claim with a fresh attempt count. Fix what made
    /// them fail first (the list shows the error).
    Requeue {
        /// Requeue every parked row.
        #[arg(long, conflicts_with_all = ["id", "board"])]
        all: bool,
        /// Requeue the rows with these outbox ids.
        #[arg(long, num_args = 1..)]
        id: Vec<i64>,
        /// Requeue the parked rows of this board.
        #[arg(long)]
        board: Option<String>,
    },
}

pub async fn run(settings: &Settings, command: ParkedCommand) -> anyhow::Result<()> {
    let db = common::database(&settings.database).await?;
    match command {
        ParkedCommand::List { limit, json } => {
            let rows = outbox::list_parked(&db, limit as usize).await?;
            if json {
                println!("{}", serde_json::to_string(&rows)?);
            } else if rows.is_empty() {
                println!("no parked rows");
            } else {
                for r in &rows {
                    println!(
                        "{}\tboard={}\tuser={}\tversion={}\tattempts={}\terror={}",
                        r.id,
                        r.board,
                        r.user_id,
                        r.version,
                        r.attempts,
                        r.last_error.as_deref().unwrap_or("-")
                    );
                }
            }
        }
        ParkedCommand::Requeue { all, id, board } => {
            if !all && id.is_empty() && board.is_none() {
                anyhow::bail!("say which rows: --all, --id ID..., or --board BOARD");
            }
            let ids = (!id.is_empty()).then_some(id.as_slice());
            let n = outbox::requeue_parked(&db, ids, board.as_deref()).await?;
            println!("requeued {n} parked rows");
        }
    }
    db.close();
    Ok(())
}
