//! `lbctl period close|show|verify`: a period's frozen standings and their digest, for
//! payouts (core's `board/periods.rs` and `board/verification.rs`).

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::board::periods::{self, Verification};
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::BoardId;

use crate::common;

/// One period of a board.
#[derive(clap::Args)]
pub struct PeriodArgs {
    #[arg(long)]
    board: String,
    /// The period id: its start in UTC, YYYYMMDDTHHMMSSZ (commands and reads name it).
    #[arg(long)]
    period: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
pub enum PeriodCommand {
    /// Close an ended period now (the reconciler does after its passes): wait for the commands
    /// still in flight in it and, once Redis holds all of it, freeze its standings with their
    /// digest. Idempotent.
    Close {
        #[command(flatten)]
        period: PeriodArgs,
    },
    /// A closed period's close (when, entries, digest) and its first standings.
    Show {
        #[command(flatten)]
        period: PeriodArgs,
        /// Standings to print.
        #[arg(long, default_value_t = 10)]
        limit: i64,
    },
    /// Recompute a closed period's digest from its frozen rows and check it against the
    /// period's seal (the close's, or an erasure's re-seal since), and each row against the
    /// events. Exit status 0 when the standings hold, with or without changes the records
    /// explain (an erasure, a ban at the close, a removal: each counted); 1 when they do not
    /// hold (and for any error, with no verification printed).
    Verify {
        #[command(flatten)]
        period: PeriodArgs,
    },
}

pub async fn run(settings: &Settings, command: PeriodCommand) -> anyhow::Result<()> {
    use periods::CloseOutcome;
    let db = common::database(&settings.database).await?;
    let (PeriodCommand::Close { period: args }
    | PeriodCommand::Show { period: args, .. }
    | PeriodCommand::Verify { period: args }) = &command;
    let board = BoardId::parse(&args.board).context("--board")?;
    let period = args.period.as_str();
    anyhow::ensure!(
        ledgerboard_core::model::is_period_id(period),
        "--period: {period:?} is not a period id (YYYYMMDDTHHMMSSZ)"
    );
    let json = args.json;
    let not_closed = || anyhow::anyhow!("period {board}~{period} is not closed");
    match command {
        PeriodCommand::Close { .. } => {
            let (what, closed) = match periods::close(&db, &board, period).await? {
                CloseOutcome::Closed(c) => ("closed", c),
                CloseOutcome::AlreadyClosed(c) => ("already closed", c),
                CloseOutcome::NotEnded => anyhow::bail!("period {board}~{period} has not ended"),
                CloseOutcome::Pending => anyhow::bail!(
                    "period {board}~{period} still has outbox rows on their way to Redis: run again once the projector has drained them"
                ),
                CloseOutcome::NeverResets => anyhow::bail!("board {board} never resets"),
            };
            if json {
                println!(
                    "{}",
                    serde_json::json!({"board": board, "period": period, "result": what, "close": closed})
                );
            } else {
                println!(
                    "{board}~{period}\t{what}\tentries={}\tdigest={}\tclosed_at={}",
                    closed.entries, closed.digest, closed.closed_at
                );
            }
        }
        PeriodCommand::Show { limit, .. } => {
            let closed = periods::closed(&db, &board, period)
                .await?
                .ok_or_else(not_closed)?;
            let rows = periods::standings(&db, &board, period, 0, limit).await?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"board": board, "period": period, "close": closed, "standings": rows})
                );
            } else {
                println!(
                    "{board}~{period}\tclosed_at={}\tentries={}\tdigest={}\t{} {}",
                    closed.closed_at, closed.entries, closed.digest, closed.sort, closed.tie_break
                );
                for r in rows {
                    println!("{}\t{}\t{}\t{}", r.position, r.rank, r.user_id, r.score);
                }
            }
        }
        PeriodCommand::Verify { .. } => {
            let v = periods::verify(&db, &board, period)
                .await?
                .ok_or_else(not_closed)?;
            let outcome = v.outcome();
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "board": board,
                        "period": period,
                        "outcome": outcome.as_str(),
                        "holds": outcome.holds(),
                        "description": v.describe(),
                        "verification": v,
                    })
                );
            } else {
                println!("{}", tab_line(&board, period, &v));
            }
            anyhow::ensure!(
                outcome.holds(),
                "period {board}~{period}: the frozen standings do not hold"
            );
        }
    }
    Ok(())
}

/// `period verify`'s line. Operators script against it: the fields up to `left out` are as they
/// were before the outcome had three values (only the second field's words are new:
/// `holds with explained changes`), and the counts added since are appended.
fn tab_line(board: &BoardId, period: &str, v: &Verification) -> String {
    let outcome = v.outcome();
    format!(
        "{board}~{period}\t{}\tdigest {}\trows={} (closed with {})\tagree with events={}\tdisagree={}\terased since={}\tleft out={} (unexplained {})\tleft out erased={}\tbanned at close={}\tremoved={}\tre-sealed={} (broken {})\theld for review pending={} rejected={}",
        if outcome.holds() {
            outcome.words()
        } else {
            "DOES NOT HOLD"
        },
        if v.digest_matches {
            "matches"
        } else {
            "does not match"
        },
        v.rows,
        v.entries,
        v.agree,
        v.disagree,
        v.erased,
        v.left_out,
        v.left_out_unexplained,
        v.left_out_erased,
        v.left_out_banned,
        v.left_out_removed,
        v.resealed,
        v.reseals_broken,
        v.held_pending,
        v.held_rejected
    )
}
