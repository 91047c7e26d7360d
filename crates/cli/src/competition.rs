//! `lbctl competition create|list|show`: tournaments over a declared board (core's
//! `competition/`, as `PUT /v1/competitions/{id}` and `GET /v1/competitions` do).

use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::board::definition::Definitions;
use ledgerboard_core::competition::{self, Competition, Declaration, Prize, State};
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::BoardId;

use crate::common;

#[derive(Subcommand)]
pub enum CompetitionCommand {
    /// Declare a competition over a declared board that never resets (or change it).
    Create {
        /// The competition's id: its board's.
        #[arg(long)]
        id: String,
        /// When scores start and stop being taken (RFC 3339: 2026-12-07T18:00:00Z).
        #[arg(long)]
        starts_at: String,
        #[arg(long)]
        ends_at: String,
        /// The most entrants (default: no cap).
        #[arg(long)]
        max_size: Option<i32>,
        /// Take scores from players who have not entered too.
        #[arg(long)]
        open_entry: bool,
        #[arg(long)]
        category: Option<String>,
        /// Rank ranges and rewards as JSON: '[{"from":1,"to":1,"reward":"gold","amount":100}]'.
        #[arg(long)]
        prizes: Option<String>,
        /// A JSON object given back as it is.
        #[arg(long)]
        metadata: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Competitions in id order (the first 200): of one category, one state (upcoming, open,
    /// ended).
    List {
        #[arg(long)]
        category: Option<String>,
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One competition.
    Show {
        #[arg(long)]
        id: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(settings: &Settings, command: CompetitionCommand) -> anyhow::Result<()> {
    let db = common::database(&settings.database).await?;
    match command {
        CompetitionCommand::Create {
            id,
            starts_at,
            ends_at,
            max_size,
            open_entry,
            category,
            prizes,
            metadata,
            json,
        } => {
            let id = BoardId::parse(&id).context("--id")?;
            let prizes: Vec<Prize> = prizes
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .context("--prizes: [{\"from\", \"to\", \"reward\", \"amount\"}, …]")?
                .unwrap_or_default();
            let metadata = metadata
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .context("--metadata: a JSON object")?;
            let declaration = Declaration {
                category,
                starts_at,
                ends_at,
                entry_required: Some(!open_entry),
                max_size,
                metadata,
                prizes,
            };
            let definitions = Definitions::new(Duration::ZERO);
            let (c, created) = competition::declare(&db, &definitions, &id, &declaration)
                .await
                .with_context(|| format!("competition {id}"))?;
            if json {
                println!("{}", serde_json::to_string(&c)?);
            } else {
                println!(
                    "{} {}",
                    if created { "declared" } else { "changed" },
                    line(&c)
                );
            }
        }
        CompetitionCommand::List {
            category,
            state,
            json,
        } => {
            let state = state
                .as_deref()
                .map(|s| State::parse(s).context("--state: upcoming, open or ended"))
                .transpose()?;
            let list =
                competition::list(&db, category.as_deref(), state, None, competition::MAX_PAGE)
                    .await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else {
                list.iter().for_each(|c| println!("{}", line(c)));
            }
        }
        CompetitionCommand::Show { id, json } => {
            let id = BoardId::parse(&id).context("--id")?;
            let c = competition::get(&db, &id)
                .await?
                .with_context(|| format!("no competition {id}"))?;
            if json {
                println!("{}", serde_json::to_string(&c)?);
            } else {
                println!("{}", line(&c));
            }
        }
    }
    Ok(())
}

/// A competition on one line: id, state, window, entrants (of the cap), category.
fn line(c: &Competition) -> String {
    let cap = c.max_size.map(|m| format!("/{m}")).unwrap_or_default();
    let entry = if c.entry_required { "" } else { "\topen entry" };
    format!(
        "{}\t{}\t{} .. {}\tentrants {}{cap}{entry}\tcategory={:?}\tprizes {}",
        c.id,
        c.state,
        c.starts_at,
        c.ends_at,
        c.entrants,
        c.category,
        c.prizes.len()
    )
}
