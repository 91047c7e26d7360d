//! `lbctl`: the operator's tool.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use ledgerboard_core::board::definitions::{self, Declaration};
use ledgerboard_core::board::moderation::{self, Action, Command as ModerationCommand};
use ledgerboard_core::board::periods;
use ledgerboard_core::config::Settings;
use ledgerboard_core::daemon;
use ledgerboard_core::db::{self, Database, outbox};
use ledgerboard_core::definition::BoardDefinition;
use ledgerboard_core::domain::{BoardId, UserId};
use ledgerboard_core::projection::Store;
use ledgerboard_reconciler::settings::Sections as ReconcilerSections;

mod period;

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
        command: ParkedCommand,
    },
    /// Rebuild one board's Redis projection from PostgreSQL while readers keep reading: build a
    /// new generation, switch atomically, delete the old one, then catch up on writes made
    /// meanwhile. Takes the reconciler lock (waits for a running pass).
    Rebuild {
        /// The board to rebuild.
        #[arg(long)]
        board: String,
        /// How long to wait for the reconciler lock, in seconds.
        #[arg(long, default_value_t = 120)]
        wait_secs: u64,
    },
    /// Board definitions: operator, sort, tie break, bounds, display name (PostgreSQL only; the
    /// api sees a change within `api.definition_cache_ms`).
    Board {
        #[command(subcommand)]
        command: BoardCommand,
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
        command: UserCommand,
    },
    /// Make bearer tokens for `auth.tokens`: only their SHA-256 digest goes into the settings.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
enum BoardCommand {
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

#[derive(Subcommand)]
enum UserCommand {
    /// Hide the user from every read of every board (ranks close up); their scores are kept
    /// and their commands still applied, hidden.
    Ban {
        #[arg(long)]
        user: String,
        #[command(flatten)]
        moderation: ModerationArgs,
    },
    /// Show a banned user's entries again, with the scores they hold.
    Unban {
        #[arg(long)]
        user: String,
        #[command(flatten)]
        moderation: ModerationArgs,
    },
    /// Right to erasure: remove the user's entries, ban and metadata, give their events a
    /// random pseudonym, and have the projector remove every trace from Redis; reports what
    /// was removed.
    Erase {
        #[arg(long)]
        user: String,
        /// How long to wait for the projector to remove the user from Redis (0: do not wait).
        #[arg(long, default_value_t = 30)]
        wait_secs: u64,
        #[command(flatten)]
        moderation: ModerationArgs,
    },
}

/// What every moderation command takes besides its target.
#[derive(clap::Args)]
struct ModerationArgs {
    /// Why (kept in the audit row): 1 to 512 characters.
    #[arg(long)]
    reason: String,
    /// The command's id (a UUID): the same id again is a repeat, answered without writing.
    /// A new one is made and printed when left out; give it back to retry safely.
    #[arg(long)]
    id: Option<uuid::Uuid>,
    /// Who acts, for the audit row (default: lbctl:$USER).
    #[arg(long)]
    actor: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The fields of a definition besides the operator.
#[derive(clap::Args)]
struct BoardFields {
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
}

impl BoardFields {
    fn declaration(self, operator: Option<&str>) -> anyhow::Result<Declaration> {
        use ledgerboard_core::board::definitions::{
            parse_operator, parse_reset, parse_sort, parse_tie_break,
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
        })
    }
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Generate a random token; print it once, and the `auth.tokens` entry that accepts it.
    New {
        /// The token's name (in logs and rate limits): 1 to 64 of A-Z a-z 0-9 - _ .
        #[arg(long)]
        name: String,
        /// Scopes: write:*, write:<board>, read, moderate, admin (repeat or comma-separate).
        #[arg(long, required = true, value_delimiter = ',')]
        scope: Vec<String>,
    },
    /// Read a token from stdin and print its SHA-256 digest.
    Hash,
}

#[derive(Subcommand)]
enum ParkedCommand {
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

fn main() -> ExitCode {
    daemon::main("lbctl", run)
}

async fn run(args: Args) -> anyhow::Result<()> {
    // Tokens are made without settings (and so without a database).
    if let Command::Token { command } = args.command {
        return token(command);
    }
    let settings = daemon::load_settings(args.daemon.config.as_deref())?;
    match args.command {
        Command::Token { .. } => Ok(()),
        Command::Migrate => migrate(&settings).await,
        Command::Status { json } => status(&settings, json).await,
        Command::Parked { command } => parked(&settings, command).await,
        Command::Board { command } => board(&settings, command).await,
        Command::User { command } => user(&settings, command).await,
        Command::Period { command } => period::run(&settings, command).await,
        Command::Rebuild { board, wait_secs } => {
            rebuild(args.daemon.config.as_deref(), &board, wait_secs).await
        }
    }
}

fn token(command: TokenCommand) -> anyhow::Result<()> {
    use ledgerboard_core::auth::{TokenTable, hash_token};
    match command {
        TokenCommand::New { name, scope } => {
            // 244 random bits from the OS, through two v4 UUIDs (122 random bits each).
            let token = format!(
                "lb_{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            );
            let entry = format!("{name}={}@{}", hash_token(&token), scope.join(","));
            TokenTable::parse(&entry).map_err(|e| anyhow::anyhow!(e))?;
            println!("token (shown once; give it to the client): {token}");
            println!("auth.tokens entry (entries are separated by ;): {entry}");
        }
        TokenCommand::Hash => {
            let mut token = String::new();
            std::io::stdin().read_line(&mut token)?;
            let token = token.trim_end_matches(['\r', '\n']);
            anyhow::ensure!(!token.is_empty(), "no token on stdin");
            println!("{}", hash_token(token));
        }
    }
    Ok(())
}

async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    let report = db::migrate(&settings.database)
        .await
        .context("lbctl migrate")?;
    let known = db::known_schema_version();
    if report.after > known {
        println!(
            "schema is at version {}, one migration ahead of this lbctl's {known}: nothing to apply (the next release migrated it; a rollback keeps it)",
            report.after
        );
    } else if report.applied.is_empty() {
        println!("schema is up to date at version {}", report.after);
    } else {
        for name in &report.applied {
            println!("applied {name}");
        }
        println!("schema is now at version {}", report.after);
    }
    Ok(())
}

async fn status(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let db = Database::connect(&settings.database, "lbctl")?;
    let schema = db::check_schema(&db)
        .await
        .context("reading the schema version")?;
    let outbox = if schema.applied.is_some() {
        Some(db::outbox_status(&db).await.context("reading the outbox")?)
    } else {
        None
    };
    if json {
        let value = serde_json::json!({ "schema": schema, "outbox": outbox });
        println!("{value}");
    } else {
        match schema.applied {
            Some(v) if v == schema.known => {
                println!("schema:  version {v} (this lbctl knows {})", schema.known)
            }
            // Why this release's daemons do or do not run against it.
            Some(v) => println!(
                "schema:  version {v} (this lbctl knows {}): {}",
                schema.known,
                schema.describe()
            ),
            None => println!("schema:  none applied (run `lbctl migrate`)"),
        }
        if let Some(o) = outbox {
            let age = o
                .oldest_pending_age_ms
                .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
            println!(
                "outbox:  {} pending, {} parked, oldest pending {age}",
                o.pending, o.parked
            );
        }
    }
    db.close();
    Ok(())
}

/// The reconciler's rebuild, with the reconciler's settings (its lock and chunk size).
async fn rebuild(config_file: Option<&Path>, board: &str, wait_secs: u64) -> anyhow::Result<()> {
    let settings = &daemon::load_daemon_settings::<ReconcilerSections>(config_file)?;
    // A board, or one period of a board that resets (`weekly~20261130T000000Z`).
    let board = BoardId::parse_stored(board).context("--board")?;
    let db = Database::connect(&settings.database, "lbctl")?;
    db::check_schema(&db).await?.ensure_compatible()?;
    let store = Store::connect(&settings.redis).context("redis.url")?;
    let report = ledgerboard_reconciler::rebuild::rebuild(
        &db,
        &store,
        settings,
        &board,
        std::time::Duration::from_secs(wait_secs),
    )
    .await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    db.close();
    anyhow::ensure!(
        report.catch_up.completed,
        "the rebuild switched, but its catch-up pass did not complete: run the reconciler"
    );
    Ok(())
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

async fn board(settings: &Settings, command: BoardCommand) -> anyhow::Result<()> {
    let db = Database::connect(&settings.database, "lbctl")?;
    db::check_schema(&db).await?.ensure_compatible()?;
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
            let defined = definitions::declare(&db, &board, &declaration).await?;
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
            let defined = definitions::update(&db, &board, &changes).await?;
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
            let def = definitions::get(&db, &parse(&board)?).await?;
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
                    ledgerboard_core::domain::is_period_id(&period),
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
            let defs = definitions::list(&db, after.as_ref(), limit as usize).await?;
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
async fn user(settings: &Settings, command: UserCommand) -> anyhow::Result<()> {
    let db = Database::connect(&settings.database, "lbctl")?;
    db::check_schema(&db).await?.ensure_compatible()?;
    let (action, args, wait_secs) = match command {
        UserCommand::Ban { user, moderation } => (
            Action::Ban {
                user: UserId::parse(&user).context("--user")?,
            },
            moderation,
            0,
        ),
        UserCommand::Unban { user, moderation } => (
            Action::Unban {
                user: UserId::parse(&user).context("--user")?,
            },
            moderation,
            0,
        ),
        UserCommand::Erase {
            user,
            wait_secs,
            moderation,
        } => (
            Action::Erase {
                user: UserId::parse(&user).context("--user")?,
            },
            moderation,
            wait_secs,
        ),
    };
    moderate(&db, action, args, wait_secs).await
}

/// Runs one moderation command and prints what it did; for an erasure, waits up to
/// `wait_secs` for the projector to take the user out of Redis and says whether it did.
async fn moderate(
    db: &Database,
    action: Action,
    args: ModerationArgs,
    wait_secs: u64,
) -> anyhow::Result<()> {
    let erased = match &action {
        Action::Erase { user } => Some(user.clone()),
        _ => None,
    };
    let cmd = ModerationCommand {
        action_id: args.id.unwrap_or_else(uuid::Uuid::new_v4),
        action,
        reason: args.reason,
        actor: args.actor.unwrap_or_else(default_actor),
    };
    let done = moderation::moderate(db, &cmd)
        .await
        .with_context(|| format!("{} (action id {})", cmd.action.name(), cmd.action_id))?;
    // The erasure's rows name the user until they are projected.
    let mut redis_pending = None;
    if let Some(user) = &erased {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(wait_secs);
        loop {
            let pending = moderation::erasure_pending(db, user).await?;
            if pending == 0 || std::time::Instant::now() >= deadline {
                redis_pending = Some(pending);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
    if args.json {
        let mut value = serde_json::json!({
            "action_id": done.action_id.to_string(),
            "action": done.action,
            "duplicate": done.duplicate,
            "at": done.at,
            "actor": done.actor,
            "result": done.result,
        });
        if let Some(pending) = redis_pending {
            value["redis_pending_boards"] = pending.into();
        }
        println!("{value}");
        return Ok(());
    }
    let r = &done.result;
    let again = if done.duplicate {
        " (a repeat of this id: nothing written now)"
    } else {
        ""
    };
    println!(
        "{} {}: action id {}, at {} by {}{again}",
        done.action,
        cmd.action.user(),
        done.action_id,
        done.at,
        done.actor
    );
    let boards = r["boards"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    println!("entries: {} (boards: {boards})", r["entries"]);
    if erased.is_some() {
        println!(
            "postgresql: {} entries, {} removal tombstones and {} ban removed; {} events, {} outbox rows and {} earlier audit rows pseudonymised (metadata removed)",
            r["entries"],
            r["removed_entries"],
            if r["ban"] == true { "the" } else { "no" },
            r["events"],
            r["outbox_rows"],
            r["audit_rows"]
        );
        if r["standings_rows"].as_i64().is_some_and(|n| n > 0) {
            println!(
                "postgresql: {} rows of closed periods' frozen standings pseudonymised, {} periods' digests re-sealed ({} found not matching before: `lbctl period verify` says they do not hold); `lbctl period verify` counts the rows as erased",
                r["standings_rows"], r["periods_resealed"], r["periods_mismatched"]
            );
        }
        match redis_pending {
            Some(0) => println!(
                "redis: every trace removed (member, version, metadata, tombstone) on the boards above"
            ),
            Some(n) => println!(
                "redis: {n} boards still wait for the projector (pending or parked outbox rows); run again with the same --id to check"
            ),
            None => {}
        }
    }
    Ok(())
}

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

/// Who acts when --actor is left out: lbctl and the operating system's user.
fn default_actor() -> String {
    format!(
        "lbctl:{}",
        std::env::var("USER").unwrap_or_else(|_| "unknown".into())
    )
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
        println!(
            "{}\t{what}\toperator={}\tsort={}\ttie_break={}\tscore={}..{}{deltas}{reset}\trevision={}\tdisplay_name={:?}",
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

async fn parked(settings: &Settings, command: ParkedCommand) -> anyhow::Result<()> {
    let db = Database::connect(&settings.database, "lbctl")?;
    db::check_schema(&db).await?.ensure_compatible()?;
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
