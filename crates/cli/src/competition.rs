//! `lbctl competition create|list|show|close|verify`: tournaments, cohorts and leagues over a
//! declared board that resets (core's `competition/`, as `PUT /v1/competitions/{id}`, `GET
//! /v1/competitions`, `POST …/runs/{run}/close` and `GET …/verification` do).

use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::board::definition::Definitions;
use ledgerboard_core::competition::{self, CloseOutcome, Competition, Declaration, Prize, State};
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::BoardId;

use crate::common;

#[derive(Subcommand)]
pub enum CompetitionCommand {
    /// Declare a competition over a declared board that resets (or change it): a one-off with
    /// --ends-at (its board reset manual), or recurring without (each period of its board a run).
    Create {
        /// The competition's id: its board's.
        #[arg(long)]
        id: String,
        /// When scores start and stop being taken (RFC 3339, whole seconds:
        /// 2026-12-07T18:00:00Z; without --starts-at, from the next second).
        #[arg(long)]
        starts_at: Option<String>,
        #[arg(long)]
        ends_at: Option<String>,
        /// A recurring competition's runs take scores this many seconds from their start.
        #[arg(long)]
        duration_s: Option<i32>,
        /// The most entrants of a run (default: no cap).
        #[arg(long)]
        max_size: Option<i32>,
        /// The most entrants of a cohort: each entrant ranks in a cohort of its run.
        #[arg(long)]
        cohort_size: Option<i32>,
        /// Cohorts by rating: an entry joins the open cohort nearest its rating within this.
        #[arg(long)]
        rating_band: Option<i64>,
        /// A league's tiers, lowest first, as JSON:
        /// '[{"name":"bronze","promote":5},{"name":"silver","promote":5,"relegate":5}]'.
        #[arg(long)]
        tiers: Option<String>,
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
    /// Close an ended run now (the reconciler closes them after its passes): its cohorts'
    /// standings, prizes and moves frozen under one digest chained to the run before.
    Close {
        #[arg(long)]
        id: String,
        /// The run's period id (YYYYMMDDTHHMMSSZ).
        #[arg(long)]
        run: String,
        #[arg(long)]
        json: bool,
    },
    /// Verify every closed run, oldest first: digests, the chain, moves, each cohort's
    /// standings against the events. Exits 0 when the history holds (with or without explained
    /// changes), 1 when it does not.
    Verify {
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
            duration_s,
            max_size,
            cohort_size,
            rating_band,
            tiers,
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
            let tiers = tiers
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .context("--tiers: [{\"name\", \"promote\"?, \"relegate\"?, \"prizes\"?}, …]")?
                .unwrap_or_default();
            let declaration = Declaration {
                category,
                starts_at,
                ends_at,
                duration_s,
                entry_required: Some(!open_entry),
                max_size,
                cohort_size,
                rating_band,
                tiers,
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
        CompetitionCommand::Close { id, run, json } => {
            let id = BoardId::parse(&id).context("--id")?;
            let (outcome, closed) = match competition::close(&db, &id, &run)
                .await
                .with_context(|| format!("competition {id}, run {run}"))?
            {
                CloseOutcome::Closed(c) => ("closed", Some(c)),
                CloseOutcome::AlreadyClosed(c) => ("already closed", Some(c)),
                CloseOutcome::NotEnded => ("not ended", None),
                CloseOutcome::Pending => {
                    ("pending: rows of the run still on their way to Redis", None)
                }
                CloseOutcome::Waiting => ("waiting: an earlier run closes first", None),
            };
            if json {
                println!("{}", serde_json::json!({"outcome": outcome, "run": closed}));
            } else {
                match closed {
                    Some(c) => println!(
                        "{outcome}\t{id}\trun {}\tboards {}\tentries {}\tmoves {}\tdigest {}",
                        c.run, c.boards, c.entries, c.moves, c.digest
                    ),
                    None => println!("{outcome}\t{id}\trun {run}"),
                }
            }
        }
        CompetitionCommand::Verify { id, json } => {
            let id = BoardId::parse(&id).context("--id")?;
            competition::get(&db, &id)
                .await?
                .with_context(|| format!("no competition {id}"))?;
            let v = competition::verify(&db, &id).await?;
            if json {
                println!("{}", serde_json::to_string(&v)?);
            } else {
                for r in &v.runs {
                    println!(
                        "{}\t{}\tboards {} ({} hold, {} explained, {} broken)\tmoves {}",
                        r.run,
                        r.outcome.words(),
                        r.boards,
                        r.boards_hold,
                        r.boards_explained,
                        r.boards_broken,
                        r.moves
                    );
                    for p in &r.problems {
                        println!("\t{p}");
                    }
                }
                println!("{id}\t{}\truns {}", v.outcome.words(), v.runs.len());
            }
            if !v.outcome.holds() {
                std::process::exit(1);
            }
        }
    }
    Ok(())
}

/// A competition on one line: id, state, window (or recurring), run now, entrants (of the
/// cap), cohorts, tiers, category.
fn line(c: &Competition) -> String {
    let cap = c.max_size.map(|m| format!("/{m}")).unwrap_or_default();
    let entry = if c.entry_required { "" } else { "\topen entry" };
    let window = match (&c.starts_at, &c.ends_at) {
        (Some(from), Some(to)) => format!("{from} .. {to}"),
        _ => "recurring".to_owned(),
    };
    let cohorts = c
        .cohort_size
        .map(|n| format!("\tcohorts {} of <={n}", c.cohorts))
        .unwrap_or_default();
    let tiers = if c.tiers.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = c.tiers.iter().map(|t| t.name.as_str()).collect();
        format!("\ttiers {}", names.join(","))
    };
    format!(
        "{}\t{}\t{window}\trun {}\tentrants {}{cap}{cohorts}{tiers}{entry}\tcategory={:?}\tprizes {}",
        c.id,
        c.state,
        c.run.as_deref().unwrap_or("-"),
        c.entrants,
        c.category,
        c.prizes.len()
    )
}
