//! Command throughput through the API (HTTP, token check, the one-statement command, JSON
//! answer) against pgbench running the same statement at the same client counts.

use std::path::Path;
use std::time::Duration;

use ledgerboard_core::board::Operator;
use ledgerboard_testkit::TEST_TOKEN;
use serde::Serialize;

use crate::api::Stack;
use crate::cpu::{Cpu, Meter};
use crate::load::{self, percentile};
use crate::pgbench::{self, strip_comments};

/// Users the commands spread over, uniformly: few enough to update existing rows, many enough
/// that two clients rarely wait on one user's row lock.
const USERS: u64 = 100_000;
pub const BOARD: &str = "commands";

#[derive(Debug, Serialize)]
pub struct CommandFigures {
    pub clients: usize,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub pgbench_per_s: f64,
    pub pgbench_p50_ms: f64,
    pub pgbench_p99_ms: f64,
    /// CPU per command (µs by process: `ours` is the api).
    pub cpu_us: Cpu,
    /// CPU per pgbench statement (µs: PostgreSQL's backends, pgbench itself under `tools`).
    pub pgbench_cpu_us: Cpu,
    /// The same api's HTTP ceiling at the same client count (an unknown path: 404 from the
    /// same router, middleware and load tool, no database): the HTTP hop's own latency, which
    /// a command adds to its statement's.
    pub ceiling_p50_ms: f64,
    pub ceiling_cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct Commands {
    pub seconds: f64,
    pub users: u64,
    pub levels: Vec<CommandFigures>,
    pub itemised: Itemised,
}

/// What PostgreSQL spends on one command statement, in parts: pgbench at 1 client on a fresh
/// database each, PostgreSQL's CPU per transaction (µs). A transaction of `SELECT 1` is the
/// protocol's and a transaction's own cost; the command statement with triggers off
/// (`session_replication_role = replica`: the entry counts and the foreign-key checks do not
/// run) adds the statement's own work; the statement as it runs adds the triggers.
#[derive(Debug, Serialize)]
pub struct Itemised {
    pub transaction_us: f64,
    /// None when the database role may not turn triggers off (not a superuser).
    pub without_triggers_us: Option<f64>,
    pub statement_us: f64,
}

impl Commands {
    /// The highest rate the API reached: "the measured command capacity".
    pub fn capacity(&self) -> f64 {
        self.levels.iter().map(|l| l.per_s).fold(0.0, f64::max)
    }
}

pub async fn run(quick: bool, out: &Path) -> anyhow::Result<Commands> {
    let seconds = if quick { 1.0 } else { 8.0 };
    let clients_levels: &[usize] = if quick { &[1, 16] } else { &[1, 4, 16, 64] };
    let script = out.join("command.sql");
    std::fs::write(&script, pgbench_script())?;
    let mut levels = Vec::new();
    for &clients in clients_levels {
        eprintln!("commands through the API with {clients} client(s)");
        // A fresh database for each side, so neither inherits the other's table bloat.
        let stack = Stack::start(clients + 4).await?;
        let ours = load::closed_loop(
            stack.addr,
            clients,
            Duration::from_secs_f64(seconds),
            201,
            command_request,
        )
        .await?;
        eprintln!("the same api's HTTP ceiling (404 of an unknown path), {clients} client(s)");
        let ceiling = load::closed_loop(
            stack.addr,
            clients,
            Duration::from_secs_f64(seconds / 2.0),
            404,
            |_, _| load::request("GET", "/v1/none", None, None),
        )
        .await?;
        stack.stop().await?;
        eprintln!("limit: pgbench running the command statement, {clients} client(s)");
        let stack = Stack::start(clients + 4).await?;
        let meter = Meter::start();
        let limit = pgbench::run_timed(&stack.db.url, &script, clients, seconds)?;
        let pgbench_cpu = meter.stop();
        stack.stop().await?;
        levels.push(CommandFigures {
            clients,
            per_s: ours.per_s(),
            p50_ms: ours.percentile(0.5),
            p99_ms: ours.percentile(0.99),
            pgbench_per_s: limit.tps,
            pgbench_p50_ms: percentile(&limit.latencies_ms, 0.5),
            pgbench_p99_ms: percentile(&limit.latencies_ms, 0.99),
            cpu_us: ours.cpu_per_request(),
            pgbench_cpu_us: pgbench_cpu.per(limit.latencies_ms.len() as f64),
            ceiling_p50_ms: ceiling.percentile(0.5),
            ceiling_cpu_us: ceiling.cpu_per_request(),
        });
    }
    Ok(Commands {
        seconds,
        users: USERS,
        levels,
        itemised: itemise(seconds, out, &script).await?,
    })
}

/// [`Itemised`]: three pgbench runs of `seconds` at 1 client.
async fn itemise(seconds: f64, out: &Path, command: &Path) -> anyhow::Result<Itemised> {
    eprintln!("PostgreSQL's CPU per command statement, itemised (pgbench, 1 client)");
    let select = out.join("select1.sql");
    std::fs::write(&select, "SELECT 1;\n")?;
    let per_transaction = |url: String, script: std::path::PathBuf| async move {
        let meter = Meter::start();
        let run = pgbench::run_timed(&url, &script, 1, seconds)?;
        let cpu = meter.stop().per(run.latencies_ms.len() as f64);
        anyhow::Ok(cpu.postgres)
    };
    let stack = Stack::start(4).await?;
    let transaction_us = per_transaction(stack.db.url.clone(), select).await?;
    stack.stop().await?;
    let stack = Stack::start(4).await?;
    let superuser: bool = stack
        .db
        .client()
        .await
        .query_one(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await?
        .get(0);
    // libpq's `options` in the URI: the session starts with triggers off.
    let sep = if stack.db.url.contains('?') { '&' } else { '?' };
    let without = format!(
        "{}{sep}options=-c%20session_replication_role%3Dreplica",
        stack.db.url
    );
    let without_triggers_us = if superuser {
        Some(per_transaction(without, command.to_path_buf()).await?)
    } else {
        None
    };
    stack.stop().await?;
    let stack = Stack::start(4).await?;
    let statement_us = per_transaction(stack.db.url.clone(), command.to_path_buf()).await?;
    stack.stop().await?;
    Ok(Itemised {
        transaction_us,
        without_triggers_us,
        statement_us,
    })
}

/// `POST /v1/boards/commands/scores` with a new event id and a random user.
pub fn command_request(_client: usize, _i: u64) -> Vec<u8> {
    command(BOARD, "delta", |random| (random % 100 + 1) as i64)
}

/// `POST /v1/boards/{board}/scores` with a new event id, a user drawn uniformly from [`USERS`]
/// and `field` (`delta` or `score`) set to `value` of 64 random bits.
pub fn command(board: &str, field: &str, value: impl FnOnce(u64) -> i64) -> Vec<u8> {
    command_json(board, field, |random| value(random).to_string())
}

/// [`command`] with the value as JSON text (an array of one value per column, on a board with
/// columns).
pub fn command_json(board: &str, field: &str, value: impl FnOnce(u64) -> String) -> Vec<u8> {
    let event = uuid::Uuid::new_v4();
    // The event id's random bits pick the user and the value: no second random source needed.
    let user = event.as_u128() % USERS as u128;
    let value = value((event.as_u128() >> 64) as u64);
    load::request(
        "POST",
        &format!("/v1/boards/{board}/scores"),
        Some(TEST_TOKEN),
        Some(&format!(
            r#"{{"event_id":"{event}","user_id":"player-{user}","{field}":{value}}}"#
        )),
    )
}

/// The API's command statement with pgbench variables for its parameters: the event id is
/// built from two random 64-bit numbers (so one statement uses one id in all three places),
/// the user and the delta are drawn like the API load's, no trace context. The unguarded one,
/// as the api runs it for this undeclared board's commands (`board/guarded.rs`).
fn pgbench_script() -> String {
    pgbench_script_of(Operator::Add.statement(false).sql())
}

/// [`pgbench_script`] of `sql`, an `add` statement (the events section's with and without its
/// event).
pub fn pgbench_script_of(sql: &str) -> String {
    // Highest parameter numbers first: "$1" is a prefix of "$10" to "$19", "$2" of "$20". An
    // undeclared board's values: revision 0, ties by user id, the exact score range, no
    // metadata, one column (the other columns' values and bounds 0), sent to the board itself,
    // without an attempt.
    let statement = strip_comments(sql)
        .replace("$20", "NULL::uuid")
        .replace("$19", "NULL::uuid")
        .replace("$18", "0::bigint")
        .replace("$17", "0::bigint")
        .replace("$16", "0::bigint")
        .replace("$15", "0::bigint")
        .replace("$14", "0::bigint")
        .replace("$13", "0::bigint")
        .replace("$12", "1::smallint")
        .replace("$11", "1::bigint")
        .replace("$10", "NULL::text")
        .replace("$9", "9007199254740991::bigint")
        .replace("$8", "(-9007199254740991)::bigint")
        .replace("$7", "0::bigint")
        .replace("$6", "0::bigint")
        .replace(
            "$1",
            "(lpad(to_hex(:ea::bigint), 16, '0') || lpad(to_hex(:eb::bigint), 16, '0'))::uuid",
        )
        .replace("$2", &format!("'{BOARD}'::text"))
        .replace("$3", "('player-' || :u::text)")
        .replace("$4", ":d::bigint")
        .replace("$5", "NULL::text");
    format!(
        "\\set ea random(0, 9223372036854775806)\n\\set eb random(0, 9223372036854775806)\n\\set u random(0, {})\n\\set d random(1, 100)\n{statement};\n",
        USERS - 1
    )
}
