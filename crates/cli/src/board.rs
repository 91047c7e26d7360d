//! `lbctl board create|update|reset|show|remove-entry|list`: board definitions (core's
//! `board/definition/`) and a board's periods.

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::board::definition::BoardDefinition;
use ledgerboard_core::board::definition::{
    self, AttemptRule, Declaration, DefinitionError, ReviewRules, WritePolicy,
};
use ledgerboard_core::board::moderation::Action;
use ledgerboard_core::board::periods;
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::{BoardId, UserId};
use ledgerboard_core::projection::Store;

use crate::common::{self, default_actor};
use crate::moderation::{ModerationArgs, moderate};

#[derive(Subcommand)]
pub enum BoardCommand {
    /// Declare a board that has no definition yet (what is left out takes its default).
    Create {
        #[arg(long)]
        board: String,
        /// add, best or latest.
        #[arg(long)]
        operator: String,
        #[command(flatten)]
        fields: BoardFields,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Change what the flags state of a board's definition (an undeclared board's is the
    /// implicit one: add, descending, user_id); the rest stays. The operator, sort and tie break
    /// of a board with entries do not change.
    Update {
        #[arg(long)]
        board: String,
        /// add, best or latest.
        #[arg(long)]
        operator: Option<String>,
        #[command(flatten)]
        fields: BoardFields,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Open a board's next period now (at the next whole second by the database clock): for
    /// boards declared with a reset (--reset), whose scheduled periods it also cuts short.
    Reset {
        #[arg(long)]
        board: String,
        /// Who acts (default: lbctl:$USER).
        #[arg(long)]
        actor: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show a board's definition (an undeclared board's implicit one too).
    Show {
        #[arg(long)]
        board: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a user's entry from the board (idempotent by --id, audited): its score goes from
    /// every read; a later command of the user starts a new entry.
    RemoveEntry {
        #[arg(long)]
        board: String,
        /// On a board that resets: the period the entry is removed from (its id,
        /// YYYYMMDDTHHMMSSZ, as `period show` and reads name it).
        #[arg(long)]
        period: Option<String>,
        #[arg(long)]
        user: String,
        #[command(flatten)]
        moderation: ModerationArgs,
    },
    /// List the declared boards in board id order.
    List {
        /// Boards after this id.
        #[arg(long)]
        after: Option<String>,
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// The fields of a definition besides the operator.
#[derive(clap::Args)]
pub struct BoardFields {
    /// descending (the highest score ranks first) or ascending.
    #[arg(long)]
    sort: Option<String>,
    /// user_id or earliest (the first to reach a score ranks first).
    #[arg(long)]
    tie_break: Option<String>,
    #[arg(long, allow_negative_numbers = true)]
    min_score: Option<i64>,
    #[arg(long, allow_negative_numbers = true)]
    max_score: Option<i64>,
    /// Add boards only.
    #[arg(long, allow_negative_numbers = true)]
    min_delta: Option<i64>,
    /// Add boards only.
    #[arg(long, allow_negative_numbers = true)]
    max_delta: Option<i64>,
    #[arg(long)]
    display_name: Option<String>,
    /// When a new period starts: never, manual, daily, weekly, monthly, "every <n>s", or a
    /// five-field cron expression in the board's time zone ("0 18 * * FRI").
    #[arg(long)]
    reset: Option<String>,
    /// The IANA time zone of daily, weekly and monthly periods (default UTC).
    #[arg(long)]
    time_zone: Option<String>,
    /// One of up to 3 columns the board ranks by, in order, each NAME:ORDER or
    /// NAME:ORDER:MIN:MAX (`--column laps:desc --column time_ms:asc:1:3600000`); the first is
    /// the score (then without --sort, --min-score, --max-score). Given at all, they replace
    /// the board's columns.
    #[arg(long = "column", value_name = "NAME:ORDER[:MIN:MAX]")]
    columns: Vec<String>,
    /// Back to one column, the score (update).
    #[arg(long, conflicts_with = "columns")]
    no_columns: bool,
    /// A board every command to this board also applies to (repeat for each, up to 7; each
    /// declared, with the same columns, feeding no board itself). Given at all, they replace
    /// the board's feeds.
    #[arg(long = "feed", value_name = "BOARD")]
    feeds: Vec<String>,
    /// Feed no board any more (update).
    #[arg(long, conflicts_with = "feeds")]
    no_feeds: bool,
    /// Who may post scores: server (service tokens only; the default) or player (player
    /// tokens too, each for its own user id).
    #[arg(long, value_name = "server|player")]
    write_policy: Option<String>,
    /// Players' scores must come from attempts: the rule as JSON,
    /// '{"min_duration_ms":5000,"max_per_period":10,"ttl_s":3600}' (each optional), or null for
    /// none.
    #[arg(long, value_name = "JSON|null")]
    attempts: Option<String>,
    /// Review rules as JSON: '{"ceiling":[100000],"max_jump":5000,"max_per_minute":10}' (each
    /// optional), or null for none. A score past one is held for review (`lbctl review`).
    #[arg(long, value_name = "JSON|null")]
    review: Option<String>,
}

/// A flag holding a rule as JSON: None when not given.
fn json_flag<T>(
    raw: Option<&str>,
    parse: fn(&serde_json::Value) -> Result<Option<T>, DefinitionError>,
) -> anyhow::Result<Option<Option<T>>> {
    let Some(raw) = raw else { return Ok(None) };
    let value: serde_json::Value = serde_json::from_str(raw).context("not JSON")?;
    Ok(Some(parse(&value)?))
}

impl BoardFields {
    fn declaration(self, operator: Option<&str>) -> anyhow::Result<Declaration> {
        use ledgerboard_core::board::definition::{
            parse_column, parse_operator, parse_reset, parse_sort, parse_tie_break,
        };
        let columns = if self.no_columns {
            Some(Vec::new())
        } else if self.columns.is_empty() {
            None
        } else {
            Some(
                self.columns
                    .iter()
                    .map(|c| parse_column(c))
                    .collect::<Result<Vec<_>, _>>()
                    .context("--column")?,
            )
        };
        let feeds = if self.no_feeds {
            Some(Vec::new())
        } else if self.feeds.is_empty() {
            None
        } else {
            Some(
                self.feeds
                    .iter()
                    .map(|f| BoardId::parse(f))
                    .collect::<Result<Vec<_>, _>>()
                    .context("--feed")?,
            )
        };
        Ok(Declaration {
            display_name: self.display_name,
            operator: operator
                .map(parse_operator)
                .transpose()
                .context("--operator")?,
            sort: self
                .sort
                .as_deref()
                .map(parse_sort)
                .transpose()
                .context("--sort")?,
            tie_break: self
                .tie_break
                .as_deref()
                .map(parse_tie_break)
                .transpose()
                .context("--tie-break")?,
            min_score: self.min_score,
            max_score: self.max_score,
            min_delta: self.min_delta,
            max_delta: self.max_delta,
            reset: self
                .reset
                .as_deref()
                .map(parse_reset)
                .transpose()
                .context("--reset")?,
            time_zone: self.time_zone,
            columns,
            feeds,
            write_policy: self
                .write_policy
                .as_deref()
                .map(|p| WritePolicy::parse(p).ok_or(DefinitionError::WritePolicy))
                .transpose()
                .context("--write-policy")?,
            attempts: json_flag(self.attempts.as_deref(), AttemptRule::from_json)
                .context("--attempts")?,
            review: json_flag(self.review.as_deref(), ReviewRules::from_json)
                .context("--review")?,
        })
    }
}

/// After a change of a board's sort or tie break (it had no entries), asks the reconciler to
/// rebuild the board, so that no seal states the old order (`projection::read::sealed_order`).
/// The definition is committed already: a Redis that cannot be asked is a warning.
async fn forget_sealed_order(settings: &Settings, board: &BoardId) {
    let asked = match Store::connect(&settings.redis) {
        Ok(store) => ledgerboard_core::projection::apply::request_rebuild(&store, board)
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = asked {
        eprintln!(
            "warning: the order changed, and no rebuild could be asked for ({e}): run `lbctl rebuild --board {board}`"
        );
    }
}

pub async fn run(settings: &Settings, command: BoardCommand) -> anyhow::Result<()> {
    let db = common::database(&settings.database).await?;
    let parse = |b: &str| BoardId::parse(b).context("--board");
    match command {
        BoardCommand::Create {
            board,
            operator,
            fields,
            json,
        } => {
            let board = parse(&board)?;
            let declaration = fields.declaration(Some(&operator))?;
            let defined = definition::declare(&db, &board, &declaration).await?;
            if defined.order_changed {
                forget_sealed_order(settings, &board).await;
            }
            print_definition(defined.definition, json, "declared")?;
        }
        BoardCommand::Update {
            board,
            operator,
            fields,
            json,
        } => {
            let board = parse(&board)?;
            let changes = fields.declaration(operator.as_deref())?;
            let defined = definition::update(&db, &board, &changes).await?;
            if defined.order_changed {
                forget_sealed_order(settings, &board).await;
            }
            let what = if defined.changed {
                "changed"
            } else {
                "unchanged"
            };
            print_definition(defined.definition, json, what)?;
        }
        BoardCommand::Reset { board, actor, json } => {
            let board = parse(&board)?;
            let actor = actor.unwrap_or_else(default_actor);
            let Some(reset) = periods::reset(&db, &board, &actor).await? else {
                anyhow::bail!(
                    "board {board} never resets: declare it with --reset (manual, daily, weekly, monthly, \"every <n>s\" or a cron expression) first"
                );
            };
            if json {
                println!(
                    "{}",
                    serde_json::json!({"board": board, "period": reset.period, "opened": reset.opened})
                );
            } else {
                let what = if reset.opened {
                    "opens"
                } else {
                    "already opens"
                };
                println!("{board}\tperiod {} {what} at its start", reset.period);
            }
        }
        BoardCommand::Show { board, json } => {
            let def = definition::get(&db, &parse(&board)?).await?;
            let what = if def.declared {
                "declared"
            } else {
                "undeclared"
            };
            print_definition(def, json, what)?;
        }
        BoardCommand::RemoveEntry {
            board,
            period,
            user,
            moderation,
        } => {
            let mut board = parse(&board)?;
            if let Some(period) = period {
                anyhow::ensure!(
                    ledgerboard_core::model::is_period_id(&period),
                    "--period must be a period id (YYYYMMDDTHHMMSSZ)"
                );
                board = board.in_period(&period).context("--period")?;
            }
            let action = Action::Remove {
                board,
                user: UserId::parse(&user).context("--user")?,
            };
            moderate(&db, action, moderation, 0).await?;
        }
        BoardCommand::List { after, limit, json } => {
            let after = after
                .as_deref()
                .map(BoardId::parse)
                .transpose()
                .context("--after")?;
            let defs = definition::list(&db, after.as_ref(), limit as usize).await?;
            if defs.is_empty() && !json {
                println!("no declared boards");
            } else {
                print_definitions(&defs, json, "declared")?;
            }
        }
    }
    db.close();
    Ok(())
}

/// `list --json`: an array; the other commands: one object. Text: one line per definition.
fn print_definitions(defs: &[BoardDefinition], json: bool, what: &str) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(defs)?);
        return Ok(());
    }
    print_lines(defs, what);
    Ok(())
}

fn print_definition(def: BoardDefinition, json: bool, what: &str) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(&def)?);
    } else {
        print_lines(&[def], what);
    }
    Ok(())
}

fn print_lines(defs: &[BoardDefinition], what: &str) {
    for d in defs {
        let deltas = match (d.min_delta, d.max_delta) {
            (Some(min), Some(max)) => format!("\tdelta={min}..{max}"),
            _ => String::new(),
        };
        let reset = if d.reset.resets() {
            format!("\treset={}\ttime_zone={}", d.reset.as_string(), d.time_zone)
        } else {
            String::new()
        };
        let columns = if d.columns.is_empty() {
            String::new()
        } else {
            let spelt: Vec<String> = d
                .columns
                .iter()
                .map(|c| format!("{}:{}:{}:{}", c.name, c.order.as_str(), c.min, c.max))
                .collect();
            format!("\tcolumns={}", spelt.join(","))
        };
        let feeds = if d.feeds.is_empty() {
            String::new()
        } else {
            let ids: Vec<&str> = d.feeds.iter().map(BoardId::as_str).collect();
            format!("\tfeeds={}", ids.join(","))
        };
        let writers = match d.write_policy {
            WritePolicy::Server => String::new(),
            WritePolicy::Player => "\twrite_policy=player".to_owned(),
        };
        println!(
            "{}\t{what}\toperator={}\tsort={}\ttie_break={}\tscore={}..{}{deltas}{reset}{columns}{feeds}{writers}\trevision={}\tdisplay_name={:?}",
            d.board,
            d.operator.as_str(),
            d.sort.as_str(),
            d.tie_break.as_str(),
            d.min_score,
            d.max_score,
            d.revision,
            d.display_name,
        );
    }
}
