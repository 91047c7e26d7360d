//! `lbctl chaos`: concurrent clients send thousands of commands through the api (with
//! duplicates and conflicting reuses of event ids) while faults are injected: projectors
//! killed and restarted, Redis flushed, crashed or restarted, the daemons' PostgreSQL sessions
//! terminated, scores and versions corrupted and members deleted in Redis, the reconciler
//! running on a short schedule. Then the faults stop, the projector drains, one reconcile pass
//! runs, and the run checks the contract against what PostgreSQL and Redis hold.
//!
//! It runs on a database of its own and a redis-server of its own (on a free port), so it can
//! flush and crash Redis without touching anyone's data.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::config::Settings;
use ledgerboard_core::domain::BoardId;
use ledgerboard_harness::{Daemon, RedisServer, free_port};
use uuid::Uuid;

use crate::http;
use crate::stack::{API, Members, PROJECTOR, RECONCILER, Stack};

const BOARDS: [&str; 3] = ["chaos-a", "chaos-b", "chaos-c"];
const USERS: u64 = 200;
const REQUEST_LIMIT: Duration = Duration::from_secs(5);
/// How long a client keeps retrying a command whose outcome it does not know yet.
const SETTLE_LIMIT: Duration = Duration::from_secs(60);
const EVENTS: &str = include_str!("sql/events.sql");
const TERMINATE_BACKENDS: &str = include_str!("sql/terminate_backends.sql");

pub struct Options {
    pub duration: Duration,
    pub clients: usize,
    pub projectors: usize,
    pub seed: u64,
    pub out: PathBuf,
}

/// A small deterministic generator (splitmix64). The seed repeats the clients' and the fault
/// loop's choices; where the faults land among the commands depends on timing, and the member a
/// corruption hits is Redis's own random pick.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn uuid(&mut self) -> Uuid {
        uuid::Builder::from_random_bytes(
            ((u128::from(self.next()) << 64) | u128::from(self.next())).to_le_bytes(),
        )
        .into_uuid()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Command {
    board: &'static str,
    user: String,
    delta: i64,
}

/// What the clients learned, shared between them.
#[derive(Default)]
struct Ledger {
    /// Commands the api accepted (201, or 200 after an attempt whose answer was lost).
    accepted: HashMap<Uuid, Command>,
    /// Their event ids in the order they were accepted (a repeatable pick for duplicates), and
    /// the score and version the first answer gave.
    order: Vec<(Uuid, Option<(i64, i64)>)>,
    /// Commands whose outcome no answer told within the settle limit.
    unresolved: HashMap<Uuid, Command>,
    sent: u64,
    duplicates_confirmed: u64,
    conflicts_refused: u64,
    retries: u64,
    /// Answers that break the contract, as they came.
    violations: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    KillProjector,
    FlushRedis,
    CrashRedis,
    RestartRedis,
    TerminateSessions,
    CorruptScore,
    CorruptVersion,
    DeleteMember,
}

const FAULTS: [Fault; 8] = [
    Fault::KillProjector,
    Fault::FlushRedis,
    Fault::CrashRedis,
    Fault::RestartRedis,
    Fault::TerminateSessions,
    Fault::CorruptScore,
    Fault::CorruptVersion,
    Fault::DeleteMember,
];

impl Fault {
    fn describe(self) -> &'static str {
        match self {
            Fault::KillProjector => "projector SIGKILLed and restarted",
            Fault::FlushRedis => "Redis FLUSHALL",
            Fault::CrashRedis => "Redis killed, restarted empty",
            Fault::RestartRedis => "Redis restarted (SHUTDOWN SAVE, data kept)",
            Fault::TerminateSessions => {
                "daemons' PostgreSQL sessions terminated (pg_terminate_backend)"
            }
            Fault::CorruptScore => "a member's score set to a random value",
            Fault::CorruptVersion => "a member's version set lower or to garbage",
            Fault::DeleteMember => "a member deleted from the sorted set and the version hash",
        }
    }
}

pub async fn run(settings: &Settings, options: Options) -> anyhow::Result<()> {
    let mut redis = RedisServer::start().context("starting a redis-server of the run's own")?;
    let reconciler_admin = format!("127.0.0.1:{}", free_port()?);
    let stack = Stack::create(
        settings,
        "lbchaos",
        &redis.url(),
        &[
            ("LEDGERBOARD__RECONCILER__INTERVAL_MS", "1000"),
            ("LEDGERBOARD__RECONCILER__LOCK_TTL_MS", "5000"),
            ("LEDGERBOARD__RECONCILER__LOCK_RENEW_MS", "1000"),
            ("LEDGERBOARD__REDIS__RESPONSE_TIMEOUT_MS", "500"),
            ("LEDGERBOARD__REDIS__CONNECT_TIMEOUT_MS", "500"),
            ("LEDGERBOARD__PROJECTOR__OUTAGE_BACKOFF_MAX_MS", "500"),
        ],
    )
    .await?;
    // Ctrl-C or SIGTERM stops the run, and the database is still dropped.
    let cancel = ledgerboard_core::shutdown::on_signal();
    let outcome = tokio::select! {
        outcome = chaos(&stack, &mut redis, &reconciler_admin, &options) => outcome,
        _ = cancel.cancelled() => Err(anyhow::anyhow!("interrupted")),
    };
    let cleaned = stack.cleanup().await;
    let report = outcome?;
    cleaned?;
    println!("{}", report.markdown);
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("creating {}", options.out.display()))?;
    let path = options.out.join("report.md");
    std::fs::write(&path, &report.markdown)?;
    println!("written to {}", path.display());
    anyhow::ensure!(
        report.mismatches == 0,
        "{} mismatch(es) with the contract (see {})",
        report.mismatches,
        path.display()
    );
    Ok(())
}

struct Report {
    markdown: String,
    mismatches: usize,
}

async fn chaos(
    stack: &Stack,
    redis: &mut RedisServer,
    reconciler_admin: &str,
    options: &Options,
) -> anyhow::Result<Report> {
    let started = Instant::now();
    let _api = stack.start(API, &[])?;
    let mut projectors = (0..options.projectors.max(1))
        .map(|_| stack.start(PROJECTOR, &[]))
        .collect::<anyhow::Result<Vec<Daemon>>>()?;
    let mut reconciler = stack.start(
        RECONCILER,
        &[("LEDGERBOARD__RECONCILER__ADMIN_LISTEN", reconciler_admin)],
    )?;

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let deadline = Instant::now() + options.duration;
    let clients: Vec<_> = (0..options.clients.max(1))
        .map(|i| {
            tokio::spawn(client(
                stack.api_addr,
                stack.bearer.clone(),
                ledger.clone(),
                Rng(options.seed ^ (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)),
                deadline,
            ))
        })
        .collect();

    let mut rng = Rng(options.seed);
    let mut injected: BTreeMap<Fault, u64> = FAULTS.iter().map(|f| (*f, 0)).collect();
    // Every kind once per round, in a random order: a short run still tries them all.
    let mut round: Vec<Fault> = Vec::new();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200 + rng.below(600))).await;
        if round.is_empty() {
            round = FAULTS.to_vec();
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let Some(fault) = round.pop() else { continue };
        if inject(fault, stack, redis, &mut projectors, &mut rng).await? {
            *injected.entry(fault).or_default() += 1;
        }
    }
    for c in clients {
        c.await.context("a client task failed")?;
    }
    let load_secs = options.duration.as_secs_f64();

    // The faults have stopped: every process up, the outbox drained, then one pass.
    if !redis.ping() {
        redis.restart()?;
    }
    for p in projectors.iter_mut() {
        if !p.is_running() {
            *p = stack.start(PROJECTOR, &[])?;
        }
    }
    let drained = wait_drained(stack, Duration::from_secs(120)).await?;
    let passes = reconciler_passes(reconciler_admin).await.unwrap_or(-1.0);
    tokio::task::block_in_place(|| reconciler.terminate(Duration::from_secs(15)));
    let pass = stack.reconcile_once(&[]).await?;
    for p in projectors.iter_mut() {
        tokio::task::block_in_place(|| p.terminate(Duration::from_secs(15)));
    }

    let ledger = std::mem::take(&mut *ledger.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);
    let mut mismatches: Vec<String> = ledger.violations.clone();
    mismatches.extend(check(stack, &ledger).await?);
    if drained.0 != 0 || drained.1 != 0 {
        mismatches.push(format!(
            "outbox after the drain: {} pending, {} parked",
            drained.0, drained.1
        ));
    }

    let mut md = String::from("# ledgerboard chaos run\n\n");
    md.push_str(&format!(
        "Seed {}, {} s of load and faults ({:.0} s with the drain and checks), {} clients, {} projectors.\n\n",
        options.seed,
        options.duration.as_secs(),
        started.elapsed().as_secs_f64(),
        options.clients,
        options.projectors
    ));
    md.push_str("| figure | value |\n|---|---|\n");
    for (name, value) in [
        ("requests sent", ledger.sent.to_string()),
        (
            "commands accepted (each checked once in PostgreSQL)",
            ledger.accepted.len().to_string(),
        ),
        (
            "commands/s accepted during the faults",
            format!("{:.0}", ledger.accepted.len() as f64 / load_secs.max(0.001)),
        ),
        (
            "duplicates answered 200 with the first outcome",
            ledger.duplicates_confirmed.to_string(),
        ),
        (
            "conflicting reuses refused 409",
            ledger.conflicts_refused.to_string(),
        ),
        (
            "retries after an answer was lost (5xx, timeout, reset)",
            ledger.retries.to_string(),
        ),
        (
            "commands left unresolved",
            ledger.unresolved.len().to_string(),
        ),
        (
            "reconciler passes during the run (its /metrics)",
            format!("{passes:.0}"),
        ),
        (
            "final pass: rows checked",
            pass["totals"]["checked"].to_string(),
        ),
        (
            "final pass: drift found (missing+stale+ahead+corrupt+orphan)",
            drift(&pass["totals"]).to_string(),
        ),
        (
            "final pass: repaired / removed",
            format!(
                "{} / {}",
                pass["totals"]["repaired"], pass["totals"]["removed"]
            ),
        ),
        (
            "outbox after the drain: pending / parked",
            format!("{} / {}", drained.0, drained.1),
        ),
        ("**mismatches**", mismatches.len().to_string()),
    ] {
        md.push_str(&format!("| {name} | {value} |\n"));
    }
    md.push_str("\n| fault | injected |\n|---|---|\n");
    for (fault, n) in &injected {
        md.push_str(&format!("| {} | {n} |\n", fault.describe()));
    }
    md.push_str(
        "\nChecked after the drain and one reconcile pass: every accepted command has exactly one \
         event with its payload and no other event exists; every score is the sum of its accepted \
         deltas and every version their count; every board's sorted set and version hash equal \
         `user_scores`; no outbox row is pending or parked.\n",
    );
    if !mismatches.is_empty() {
        md.push_str("\n## Mismatches (first 50)\n\n");
        for m in mismatches.iter().take(50) {
            md.push_str(&format!("- {m}\n"));
        }
    }
    Ok(Report {
        markdown: md,
        mismatches: mismatches.len(),
    })
}

fn drift(totals: &serde_json::Value) -> u64 {
    ["missing", "stale", "ahead", "corrupt", "orphan"]
        .iter()
        .map(|k| totals[*k].as_u64().unwrap_or(0))
        .sum()
}

/// Injects one fault; false when there was nothing to act on (an empty board).
async fn inject(
    fault: Fault,
    stack: &Stack,
    redis: &mut RedisServer,
    projectors: &mut [Daemon],
    rng: &mut Rng,
) -> anyhow::Result<bool> {
    match fault {
        Fault::KillProjector => {
            let i = rng.below(projectors.len() as u64) as usize;
            projectors[i].kill();
            projectors[i] = tokio::task::block_in_place(|| stack.start(PROJECTOR, &[]))?;
        }
        Fault::FlushRedis => {
            redis.command(&["FLUSHALL"])?;
        }
        Fault::CrashRedis => tokio::task::block_in_place(|| {
            redis.crash();
            redis.restart()
        })?,
        Fault::RestartRedis => tokio::task::block_in_place(|| {
            redis.stop();
            redis.restart()
        })?,
        Fault::TerminateSessions => {
            let client = stack.db.client().await?;
            client
                .query_one(TERMINATE_BACKENDS, &[&stack.db_name])
                .await?;
        }
        Fault::CorruptScore | Fault::CorruptVersion | Fault::DeleteMember => {
            let board = BoardId::parse(BOARDS[rng.below(BOARDS.len() as u64) as usize])?;
            let keys = stack.cache.keys();
            let mut conn = stack.cache.connection().await?;
            let member: Option<String> = redis::cmd("ZRANDMEMBER")
                .arg(keys.scores(&board))
                .query_async(&mut conn)
                .await?;
            let Some(member) = member else {
                return Ok(false);
            };
            let mut pipe = redis::pipe();
            match fault {
                Fault::CorruptScore => {
                    pipe.cmd("ZADD")
                        .arg(keys.scores(&board))
                        .arg("XX")
                        .arg(rng.below(1_000_000) as i64 - 500_000)
                        .arg(&member);
                }
                Fault::CorruptVersion => {
                    let value = if rng.below(2) == 0 {
                        "0".to_owned()
                    } else {
                        "garbage".to_owned()
                    };
                    pipe.cmd("HSET")
                        .arg(keys.versions(&board))
                        .arg(&member)
                        .arg(value);
                }
                _ => {
                    pipe.cmd("ZREM")
                        .arg(keys.scores(&board))
                        .arg(&member)
                        .cmd("HDEL")
                        .arg(keys.versions(&board))
                        .arg(&member);
                }
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
    }
    Ok(true)
}

/// The ledger, also after a client panicked while holding it (its data is still whole).
fn lock(ledger: &Mutex<Ledger>) -> std::sync::MutexGuard<'_, Ledger> {
    ledger
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One client: new commands, duplicates of accepted ones, and conflicting reuses, until the
/// deadline; a command whose answer is lost is sent again until an answer says what happened.
async fn client(
    api: std::net::SocketAddr,
    bearer: String,
    ledger: Arc<Mutex<Ledger>>,
    mut rng: Rng,
    deadline: Instant,
) {
    while Instant::now() < deadline {
        let roll = rng.below(100);
        let known = {
            let l = lock(&ledger);
            if l.order.is_empty() || roll >= 15 {
                None
            } else {
                let (event, first) = l.order[rng.below(l.order.len() as u64) as usize];
                l.accepted.get(&event).map(|c| (event, c.clone(), first))
            }
        };
        match known {
            // A duplicate: the same command again must answer 200 with the first outcome.
            Some((event, command, first)) if roll < 10 => {
                let (status, body, retries) = send(api, &bearer, event, &command, deadline).await;
                let mut l = lock(&ledger);
                l.sent += 1 + retries;
                l.retries += retries;
                let same_outcome = first.is_none_or(|f| outcome(&body) == Some(f));
                if status == Some(200) && body.contains(r#""duplicate":true"#) && same_outcome {
                    l.duplicates_confirmed += 1;
                } else if status.is_some() {
                    l.violations
                        .push(format!("duplicate of {event} answered {status:?}: {body}"));
                }
            }
            // A conflicting reuse: the same event id with another delta must be refused.
            Some((event, mut command, _)) => {
                // Deltas are within ±100: one more is another valid delta (never 0).
                command.delta = if command.delta == -1 {
                    1
                } else {
                    command.delta + 1
                };
                let (status, body, retries) = send(api, &bearer, event, &command, deadline).await;
                let mut l = lock(&ledger);
                l.sent += 1 + retries;
                l.retries += retries;
                if status == Some(409) {
                    l.conflicts_refused += 1;
                } else if status.is_some() {
                    l.violations.push(format!(
                        "conflicting reuse of {event} answered {status:?}: {body}"
                    ));
                }
            }
            None => {
                let event = rng.uuid();
                let magnitude = 1 + rng.below(100) as i64;
                let command = Command {
                    board: BOARDS[rng.below(BOARDS.len() as u64) as usize],
                    user: format!("user-{:03}", rng.below(USERS)),
                    delta: if rng.below(2) == 0 {
                        magnitude
                    } else {
                        -magnitude
                    },
                };
                let (status, body, retries) = send(api, &bearer, event, &command, deadline).await;
                let mut l = lock(&ledger);
                l.sent += 1 + retries;
                l.retries += retries;
                match status {
                    Some(201) => {
                        l.accepted.insert(event, command);
                        l.order.push((event, outcome(&body)));
                    }
                    // An earlier attempt committed but its answer was lost.
                    Some(200) if retries > 0 && body.contains(r#""duplicate":true"#) => {
                        l.accepted.insert(event, command);
                        l.order.push((event, outcome(&body)));
                    }
                    None => {
                        l.unresolved.insert(event, command);
                    }
                    Some(s) => l
                        .violations
                        .push(format!("new command {event} answered {s}: {body}")),
                }
            }
        }
    }
}

/// The score and version a command's answer states.
fn outcome(body: &str) -> Option<(i64, i64)> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    Some((v["score"].as_i64()?, v["version"].as_i64()?))
}

/// Sends a command until an answer says what happened to it (2xx or 4xx); 5xx answers and
/// transport errors are retried, which the event id makes harmless. Returns the final answer
/// (None when the settle limit ran out) and the number of retries.
async fn send(
    api: std::net::SocketAddr,
    bearer: &str,
    event: Uuid,
    command: &Command,
    deadline: Instant,
) -> (Option<u16>, String, u64) {
    let body = format!(
        r#"{{"event_id":"{event}","user_id":"{}","delta":{}}}"#,
        command.user, command.delta
    );
    let path = format!("/v1/boards/{}/scores", command.board);
    let mut retries = 0;
    loop {
        let headers = [("authorization", bearer)];
        match http::request(api, "POST", &path, &headers, body.clone(), REQUEST_LIMIT).await {
            Ok((status, body)) if status < 500 => return (Some(status), body, retries),
            _ if Instant::now() > deadline + SETTLE_LIMIT => return (None, String::new(), retries),
            _ => {
                retries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn wait_drained(stack: &Stack, limit: Duration) -> anyhow::Result<(i64, i64)> {
    let started = Instant::now();
    loop {
        let status = ledgerboard_core::db::outbox_status(&stack.db).await;
        if let Ok(s) = &status
            && (s.pending == 0 || started.elapsed() > limit)
        {
            return Ok((s.pending, s.parked));
        }
        if started.elapsed() > limit {
            return Err(status
                .err()
                .map(anyhow::Error::from)
                .unwrap_or_else(|| anyhow::anyhow!("drain")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn reconciler_passes(admin: &str) -> anyhow::Result<f64> {
    let (status, text) = http::request(
        admin.parse()?,
        "GET",
        "/metrics",
        &[],
        String::new(),
        REQUEST_LIMIT,
    )
    .await?;
    anyhow::ensure!(status == 200, "metrics: {status}");
    Ok(text
        .lines()
        .filter(|l| l.starts_with("ledgerboard_reconcile_passes_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// The contract, checked against PostgreSQL and Redis.
async fn check(stack: &Stack, ledger: &Ledger) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let client = stack.db.client().await?;
    let rows = client.query(EVENTS, &[]).await?;
    let mut events: HashMap<Uuid, Command> = HashMap::new();
    for r in &rows {
        let board: String = r.try_get(1)?;
        let Some(board) = BOARDS.iter().find(|b| **b == board) else {
            problems.push(format!("an event on an unknown board {board}"));
            continue;
        };
        events.insert(
            r.try_get(0)?,
            Command {
                board,
                user: r.try_get(2)?,
                delta: i64::from(r.try_get::<_, i32>(3)?),
            },
        );
    }
    // Commands whose answer never came count if (and only if) their event exists.
    let mut effective: HashMap<Uuid, &Command> =
        ledger.accepted.iter().map(|(e, c)| (*e, c)).collect();
    for (event, command) in &ledger.unresolved {
        if events.contains_key(event) {
            effective.insert(*event, command);
        }
    }
    for (event, command) in &effective {
        match events.get(event) {
            Some(recorded) if recorded == *command => {}
            Some(recorded) => problems.push(format!(
                "event {event}: recorded {recorded:?}, accepted {command:?}"
            )),
            None => problems.push(format!("accepted event {event} has no row in score_events")),
        }
    }
    for event in events.keys() {
        if !effective.contains_key(event) {
            problems.push(format!("event {event} recorded but never accepted"));
        }
    }
    // Every score is the sum of its accepted deltas; the version counts them.
    let mut expected: BTreeMap<&str, Members> = BTreeMap::new();
    for command in effective.values() {
        let entry = expected
            .entry(command.board)
            .or_default()
            .entry(command.user.clone())
            .or_insert((0, 0));
        entry.0 += command.delta;
        entry.1 += 1;
    }
    for board in BOARDS {
        let id = BoardId::parse(board)?;
        let source = stack.source(&id).await?;
        let want = expected.remove(board).unwrap_or_default();
        diff(&mut problems, board, "PostgreSQL", &want, &source);
        let projection = stack.projection(&id).await?;
        diff(&mut problems, board, "Redis", &source, &projection);
    }
    Ok(problems)
}

/// Adds one problem per member where `got` differs from `want`.
fn diff(problems: &mut Vec<String>, board: &str, side: &str, want: &Members, got: &Members) {
    for (user, w) in want {
        match got.get(user) {
            Some(g) if g == w => {}
            other => problems.push(format!(
                "{board}/{user}: {side} holds {other:?}, expected {w:?}"
            )),
        }
    }
    for user in got.keys().filter(|u| !want.contains_key(*u)) {
        problems.push(format!(
            "{board}/{user}: {side} holds a member that should not exist"
        ));
    }
}

/// The seed of a run that was not given one.
pub fn default_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id())
}
