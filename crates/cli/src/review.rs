//! `lbctl review list|approve|reject`: the queue of scores held by their boards' review rules
//! (`board/guard/review.rs`), the same decisions as `POST /v1/reviews/{event_id}/…`.

use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::board::definition::Definitions;
use ledgerboard_core::board::group::CommandGroups;
use ledgerboard_core::board::guard::review::{self, Decided, Held, State};
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::{BoardId, EventId};

use crate::common::{self, default_actor};

#[derive(Subcommand)]
pub enum ReviewCommand {
    /// Held scores, oldest first: pending ones unless --state says otherwise.
    List {
        /// pending, approved or rejected.
        #[arg(long, default_value = "pending")]
        state: String,
        /// Only the scores sent to this board.
        #[arg(long)]
        board: Option<String>,
        /// At most this many (1 to 200).
        #[arg(long, default_value_t = 50)]
        limit: i64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Apply a held score, as the command it was, in the period it was held in (while that
    /// period is open). Approving it again applies nothing new.
    Approve {
        #[command(flatten)]
        decision: DecisionArgs,
    },
    /// Keep a held score hidden, with the reason.
    Reject {
        #[command(flatten)]
        decision: DecisionArgs,
    },
}

#[derive(clap::Args)]
pub struct DecisionArgs {
    /// The held score's event id.
    #[arg(long)]
    event: String,
    /// Why (kept with the held score): 1 to 512 characters.
    #[arg(long)]
    reason: String,
    /// Who decides (default: lbctl:$USER).
    #[arg(long)]
    actor: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub async fn run(settings: &Settings, command: ReviewCommand) -> anyhow::Result<()> {
    let db = common::database(&settings.database).await?;
    match command {
        ReviewCommand::List {
            state,
            board,
            limit,
            json,
        } => {
            let state =
                State::parse(&state).context("--state must be pending, approved or rejected")?;
            let board = board
                .as_deref()
                .map(BoardId::parse)
                .transpose()
                .context("--board")?;
            let held = review::list(&db, state, None, limit, board.as_ref()).await?;
            if json {
                println!("{}", serde_json::to_string(&held)?);
            } else {
                held.iter().for_each(print_held);
            }
            Ok(())
        }
        ReviewCommand::Approve { decision } => {
            let event = EventId::parse(&decision.event).context("--event")?;
            // One worker, groups of one: the approval is one command.
            let groups = CommandGroups::start(db.clone(), 1, 1);
            let definitions = Definitions::new(Duration::ZERO);
            let actor = decision.actor.clone().unwrap_or_else(default_actor);
            let done =
                review::approve(&groups, &definitions, &db, &event, &actor, &decision.reason)
                    .await
                    .with_context(|| format!("approve {event}"))?;
            print_decided(&done, decision.json)
        }
        ReviewCommand::Reject { decision } => {
            let event = EventId::parse(&decision.event).context("--event")?;
            let actor = decision.actor.clone().unwrap_or_else(default_actor);
            let done = review::reject(&db, &event, &actor, &decision.reason)
                .await
                .with_context(|| format!("reject {event}"))?;
            print_decided(&done, decision.json)
        }
    }
}

fn print_held(h: &Held) {
    let period = h
        .period
        .as_deref()
        .map(|p| format!("~{p}"))
        .unwrap_or_default();
    println!(
        "{}\t{}{period}\t{}\t{}\t{}: {}\t{}\theld {}",
        h.event_id, h.board, h.user_id, h.fields, h.rule, h.detail, h.state, h.held_at
    );
}

fn print_decided(d: &Decided, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(d)?);
    } else {
        match &d.outcome {
            Some(o) => println!(
                "{} {}: score {} version {}{}",
                d.event_id,
                d.state,
                o.score,
                o.version,
                if o.duplicate { " (applied before)" } else { "" }
            ),
            None => println!("{} {}", d.event_id, d.state),
        }
    }
    Ok(())
}
