//! `lbchaos chaos`: concurrent clients send thousands of commands through the api (with
//! duplicates and conflicting reuses of event ids) while faults are injected: projectors
//! killed and restarted or all stopped for a backlog, Redis flushed, crashed or restarted (with
//! and without its data), the daemons' PostgreSQL sessions terminated, scores and versions
//! corrupted and members deleted in Redis. No reconciliation pass runs during the load (the
//! reconciler daemon only serves rebuild requests). Then the faults stop, the projector drains,
//! and every board is compared with PostgreSQL before any pass: a whole board must equal it,
//! a board that is not whole must be read from PostgreSQL and then rebuilt equal. Only then one
//! reconcile pass runs, which may repair no more than the corruptions injected, and the run
//! checks the contract against what PostgreSQL and Redis hold.
//!
//! Periods (issue 22): one board, `chaos-d`, resets every 2 s, so a 12 s run crosses several
//! boundaries with commands in flight. Each period is a board of its own
//! (`chaos-d~<period id>`), and every check above that works on a board works on each period
//! with an entry: compared before the pass (whole and equal, or read from PostgreSQL and
//! rebuilt), after the moderation that follows the faults, and in the final check. The ledger
//! records the period each answer named; a duplicate must name the first answer's. The check
//! then holds each command to that period: its event is in it, the period was open (by the
//! database clock) while the command was in flight, and each period's entries are what the
//! commands that named it make of it (a member's best of one period does not carry over to the
//! next). After the drain `period=current` and `period=previous` reads must name the database's
//! periods and hold their entries; after the pass, which starts once every period with entries
//! has ended, each of those periods must be closed, `periods::verify` must hold for it (see
//! `check_closes` for the one disagreement it reports that is the product's, not the run's),
//! its frozen standings must be its ranking in PostgreSQL, and a `period=<id>` read of it must
//! give that ranking too. Bans reach every period of their user; a removal names a board, and
//! the api removes nothing from a period yet, which the check holds it to.
//!
//! It runs on a database of its own and a redis-server of its own (on a free port), so it can
//! flush and crash Redis without touching anyone's data.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::board::periods;
use ledgerboard_core::board::{BoardKind, Tally};
use ledgerboard_core::config::Settings;
use ledgerboard_core::definition::Sort;
use ledgerboard_core::domain::BoardId;
use ledgerboard_core::projection::member;
use ledgerboard_core::projection::read::Seal;
use ledgerboard_harness::http;
use ledgerboard_harness::{Daemon, RedisServer};
use uuid::Uuid;

use crate::stack::{PROJECTOR, Placed, RECONCILER, Stack};

mod moderation;
use moderation::InFlight;

/// One board of the run: its rule, and the definition the run declares for it (`PUT
/// /v1/boards/{board}` before the load), none for the undeclared add board.
struct Spec {
    name: &'static str,
    kind: BoardKind,
    sort: Sort,
    declaration: Option<&'static str>,
    /// The `n` of the board's `every <n>s` reset, for the board cut into periods (its
    /// declaration says the same; `declare` checks the api's answer against it).
    period_secs: Option<i64>,
}

/// One board per operator, each checked against its own rule: an undeclared add board (deltas),
/// a best board that is a time trial (ascending, the earliest to reach a time ranks first) and
/// a latest board (descending, earliest). The scores submitted are within [`SCORES`], so the
/// ties the earliest boards order are many. And a season: a best board (descending, earliest)
/// that resets every 2 s, so that a 12 s run crosses several boundaries with commands in
/// flight; each period is a board of its own that starts from nothing, which `best` makes
/// visible (a member's best of the last period does not carry over).
const SPECS: [Spec; 4] = [
    Spec {
        name: "chaos-a",
        kind: BoardKind::Add,
        sort: Sort::Descending,
        declaration: None,
        period_secs: None,
    },
    Spec {
        name: "chaos-b",
        kind: BoardKind::Best(Sort::Ascending),
        sort: Sort::Ascending,
        declaration: Some(
            r#"{"display_name":"chaos time trial","operator":"best","sort":"ascending","tie_break":"earliest","min_score":0,"max_score":1000}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-c",
        kind: BoardKind::Latest,
        sort: Sort::Descending,
        declaration: Some(
            r#"{"operator":"latest","sort":"descending","tie_break":"earliest","min_score":0,"max_score":1000}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-d",
        kind: BoardKind::Best(Sort::Descending),
        sort: Sort::Descending,
        declaration: Some(
            r#"{"display_name":"chaos season","operator":"best","sort":"descending","tie_break":"earliest","min_score":0,"max_score":1000,"reset":"every 2s"}"#,
        ),
        period_secs: Some(2),
    },
];
const BOARDS: [&str; 4] = [SPECS[0].name, SPECS[1].name, SPECS[2].name, SPECS[3].name];
/// The scores submitted to best and latest boards are below this (one more, a conflicting
/// reuse's value, is still within the declared bounds).
const SCORES: u64 = 200;
const USERS: u64 = 200;
const REQUEST_LIMIT: Duration = Duration::from_secs(5);
/// How long a client keeps retrying a command whose outcome it does not know yet.
const SETTLE_LIMIT: Duration = Duration::from_secs(60);
/// How long the projectors stay stopped in a backlog fault: over `api.max_lag_ms` (2 s by
/// default), so that bounded reads must leave the projection for PostgreSQL.
const BACKLOG_FOR: Duration = Duration::from_millis(2_500);
/// The bound the brief of the seal sets: after Redis comes back empty, a bounded read answers
/// from PostgreSQL within this time.
const HONEST_READ_LIMIT: Duration = Duration::from_secs(1);
/// How long a board that is not whole may take to be rebuilt: a failed rebuild is retried
/// after 10 s (`requests.rs`), so this leaves room for one failure.
const REBUILD_LIMIT: Duration = Duration::from_secs(30);
/// The reconciler's interval during the run: longer than any run, so its only pass is the one
/// at start-up, on the empty database, and it serves rebuild requests in between.
const NO_PASS_INTERVAL_MS: &str = "604800000";
const EVENTS: &str = include_str!("sql/events.sql");
const TERMINATE_BACKENDS: &str = include_str!("sql/terminate_backends.sql");
const PENDING_MEMBERS: &str = include_str!("sql/pending_members.sql");
const MEMBERS: &str = include_str!("sql/members.sql");
const REMOVED_ENTRIES: &str = include_str!("sql/removed_entries.sql");
const BANNED_USERS: &str = include_str!("sql/banned_users.sql");
const STORED_BOARDS: &str = include_str!("sql/stored_boards.sql");
const PERIOD_CLOSES: &str = include_str!("sql/period_closes.sql");
const PERIOD_STARTS: &str = include_str!("sql/period_starts.sql");
const DB_CLOCK: &str = include_str!("sql/db_clock.sql");

pub struct Options {
    pub duration: Duration,
    pub clients: usize,
    pub projectors: usize,
    pub seed: u64,
    pub out: PathBuf,
    /// The fault kinds to inject (an empty list: every kind).
    pub faults: Vec<Fault>,
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
    /// The delta of an add board, the score submitted to a best or latest one.
    value: i64,
}

/// What a command's answer stated: the member's score and version, and on a board that
/// resets the period the command landed in (a duplicate must state the first answer's, period
/// included).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    score: i64,
    version: i64,
    period: Option<String>,
}

/// A command accepted on a board that resets: the period its answer named, and when (local
/// clock, seconds since the Unix epoch) its first attempt was sent and its last answer came.
/// The check holds the command to that period, and the period to that time: the statement read
/// the database clock in between.
#[derive(Clone, Debug)]
struct Landed {
    period: String,
    sent: f64,
    answered: f64,
}

/// What the clients learned, shared between them.
#[derive(Default)]
struct Ledger {
    /// Commands the api accepted (201, or 200 after an attempt whose answer was lost).
    accepted: HashMap<Uuid, Command>,
    /// Their event ids in the order they were accepted (a repeatable pick for duplicates), and
    /// what the first answer stated.
    order: Vec<(Uuid, Option<Outcome>)>,
    /// The accepted commands on a board that resets, with the period their answer named.
    landed: HashMap<Uuid, Landed>,
    /// Commands whose outcome no answer told within the settle limit.
    unresolved: HashMap<Uuid, Command>,
    sent: u64,
    duplicates_confirmed: u64,
    conflicts_refused: u64,
    retries: u64,
    /// Answers that break the contract, as they came.
    violations: Vec<String>,
    /// Members with a client's command in flight, and how many (`moderation::InFlight`): the
    /// moderation loop races removals against them.
    in_flight: HashMap<(&'static str, String), usize>,
    /// The moderation loop's actions and answers.
    moderation: moderation::ModerationLedger,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Fault {
    KillProjector,
    FlushRedis,
    CrashRedis,
    RestartRedis,
    RestartRedisEmpty,
    Backlog,
    TerminateSessions,
    CorruptScore,
    CorruptVersion,
    DeleteMember,
}

pub const FAULTS: [Fault; 10] = [
    Fault::KillProjector,
    Fault::FlushRedis,
    Fault::CrashRedis,
    Fault::RestartRedis,
    Fault::RestartRedisEmpty,
    Fault::Backlog,
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
            Fault::RestartRedisEmpty => {
                "Redis restarted without persistence, bounded reads timed until honest and rebuilt"
            }
            Fault::Backlog => "every projector stopped for 2.5 s under load, then restarted",
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
    // Printed first, so that a run that stops on an error before its report can be repeated.
    eprintln!("lbchaos chaos: seed {}", options.seed);
    let mut redis = RedisServer::start().context("starting a redis-server of the run's own")?;
    let stack = Stack::create(
        settings,
        "lbchaos",
        &redis.url(),
        &[
            // No pass during the load: a pass would repair what the comparison before repair
            // must see. The daemon still serves the rebuild requests between passes.
            ("LEDGERBOARD__RECONCILER__INTERVAL_MS", NO_PASS_INTERVAL_MS),
            // Nor one after the injected Redis restarts (a new run id).
            ("LEDGERBOARD__RECONCILER__PASS_ON_NEW_REDIS", "false"),
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
        outcome = chaos(&stack, &mut redis, &options) => outcome,
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

/// What the faults and the probes around them found, beside the clients' ledger.
#[derive(Default)]
struct Probes {
    /// Members whose score or version chaos overwrote in Redis: a whole board may differ from
    /// PostgreSQL before the repair at these members only (the seal counts members, it cannot
    /// see an edited value; the pass finds those).
    corrupted: BTreeSet<(String, String)>,
    /// Per restart without persistence: time to the first honest bounded read, and to the
    /// first read that found the board's projection whole again.
    restarts: Vec<(Duration, Option<Duration>)>,
    /// Per backlog: rows pending when the projectors came back, the `lag_ms` a bounded read
    /// stated then, and the time until fewer than 100 rows were pending.
    backlogs: Vec<(i64, i64, Option<Duration>)>,
    /// Answers or states that break the contract.
    problems: Vec<String>,
}

/// What the run checked of the periods of the board that resets (`chaos-d`), beside the checks
/// every board gets (each period is compared as a board of its own).
#[derive(Default)]
struct SeasonChecks {
    /// Per period with an accepted command, how many accepted commands' answers named it.
    commands: BTreeMap<String, usize>,
    /// Accepted commands whose time in flight spanned a boundary (by the database clock): each
    /// landed in the period its answer named, open at some instant of that time.
    across_boundary: usize,
    /// The `period=current` and `period=previous` reads after the drain: which, the period the
    /// answer named, and its entries (equal to that period's in PostgreSQL).
    named_reads: Vec<(&'static str, String, usize)>,
    /// Periods whose `period=<id>` read in the final check equals their ranking.
    id_reads_equal: usize,
    /// Periods the one pass closed, and those closed after it (rows held at a member chaos
    /// corrupted kept the pass's close waiting: `check_closes`).
    closed_by_pass: usize,
    closed_after: usize,
    /// Closes for which `periods::verify` holds, and whose frozen standings (read through the
    /// api) equal the period's visible entries in PostgreSQL, in order.
    verified: usize,
    standings_equal: usize,
    problems: Vec<String>,
}

/// The database clock against the local one. Periods follow the database clock; the clients
/// time their commands by the local one, so the check shifts those times by the offset, give or
/// take the slack, before it holds a command to its period.
struct DbClock {
    /// Database minus local, in seconds.
    offset: f64,
    /// How far the offset may be off: half the round trip of its best measure, and a margin.
    slack: f64,
}

impl DbClock {
    /// The best of five readings (the one with the shortest round trip).
    async fn measure(stack: &Stack) -> anyhow::Result<DbClock> {
        let client = stack.db.client().await?;
        let mut best: Option<(f64, f64)> = None;
        for _ in 0..5 {
            let before = epoch_secs();
            let db: f64 = client.query_one(DB_CLOCK, &[]).await?.try_get(0)?;
            let after = epoch_secs();
            let round_trip = after - before;
            if best.is_none_or(|(r, _)| round_trip < r) {
                best = Some((round_trip, db - (before + after) / 2.0));
            }
        }
        let (round_trip, offset) = best.context("no reading of the database clock")?;
        Ok(DbClock {
            offset,
            slack: round_trip / 2.0 + 0.05,
        })
    }
}

/// After the drain, with no command to come: for each board that resets, a `period=current`
/// and a `period=previous` read (strong: from PostgreSQL, so that this checks which period the
/// api picks, not the projection, which the other checks cover). Each must name the period the
/// database names (asked just before and just after the read: a boundary may pass between) and
/// hold that period's visible entries in the board's order.
async fn period_reads(stack: &Stack, seasons: &mut SeasonChecks) -> anyhow::Result<()> {
    for spec in SPECS.iter().filter(|s| s.period_secs.is_some()) {
        let board = BoardId::parse(spec.name)?;
        for which in ["current", "previous"] {
            let named_by_db = |p: Option<periods::Periods>| {
                p.and_then(|p| {
                    if which == "current" {
                        Some(p.current)
                    } else {
                        p.previous
                    }
                })
            };
            let before = named_by_db(periods::current(&stack.db, &board).await?);
            let params = format!("period={which}&consistency=strong&limit=1000");
            let read = bounded_read(stack, &board, &params).await?;
            let after = named_by_db(periods::current(&stack.db, &board).await?);
            let Some(read) = read else {
                seasons
                    .problems
                    .push(format!("{board}: the read with period={which} failed"));
                continue;
            };
            let named = read["period"].as_str().unwrap_or_default().to_owned();
            let Ok(id) = board.in_period(&named) else {
                seasons.problems.push(format!(
                    "{board}: the read with period={which} named no period: {read}"
                ));
                continue;
            };
            if before.as_deref() != Some(named.as_str()) && after.as_deref() != Some(&named) {
                seasons.problems.push(format!(
                    "{board}: the read with period={which} named {named}, the database {before:?} \
                     then {after:?}"
                ));
            }
            let got = page_scores(&read["entries"]);
            let want = ranking(spec.sort, &stack.placed_source(&id).await?);
            if got != want {
                seasons.problems.push(format!(
                    "{id}: the read with period={which} gave {} entries, not PostgreSQL's {} in \
                     their order",
                    got.len(),
                    want.len()
                ));
            }
            seasons.named_reads.push((which, named, got.len()));
        }
    }
    Ok(())
}

/// Waits until every period in `boards` has ended by the database clock (at most a period's
/// length and a second more), so that the pass that follows must close each of them.
async fn wait_periods_ended(
    stack: &Stack,
    boards: &[BoardId],
    seasons: &mut SeasonChecks,
) -> anyhow::Result<()> {
    for spec in &SPECS {
        let Some(secs) = spec.period_secs else {
            continue;
        };
        let board = BoardId::parse(spec.name)?;
        let Some(last) = boards
            .iter()
            .filter(|b| b.base() == board)
            .filter_map(|b| b.period())
            .max()
        else {
            continue;
        };
        let started = Instant::now();
        loop {
            let current = periods::current(&stack.db, &board)
                .await?
                .map(|p| p.current);
            // Period ids are fixed-width starts: they sort as the periods do.
            if current.as_deref().is_some_and(|c| c > last) {
                break;
            }
            if started.elapsed() > Duration::from_secs(secs.unsigned_abs() + 1) {
                seasons.problems.push(format!(
                    "{board}: period {last} not ended {:?} later (current: {current:?})",
                    started.elapsed()
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// After the one pass, which started once every period with entries had ended: the pass closed
/// each of them (`reconciler/src/periods.rs`) and nothing else, except a period whose rows were
/// still held at a member chaos corrupted (the projection script refuses them until the
/// repair, and a close waits for every row of its period: `Pending`, closed after the next
/// pass); such a period is closed here once the drain is done, as `lbctl period close` would.
/// Each close must verify (`periods::verify`: the digest, and every row against the events),
/// and its frozen standings, read through the api, must be the period's visible entries in
/// PostgreSQL, in the board's order, with their versions and ties.
async fn check_closes(
    stack: &Stack,
    boards: &[BoardId],
    corrupted: &BTreeSet<(String, String)>,
    seasons: &mut SeasonChecks,
) -> anyhow::Result<()> {
    let client = stack.db.client().await?;
    let mut closed: BTreeSet<(String, String)> = BTreeSet::new();
    for r in client.query(PERIOD_CLOSES, &[]).await? {
        closed.insert((r.try_get(0)?, r.try_get(1)?));
    }
    let ended: Vec<(&BoardId, BoardId, &str)> = boards
        .iter()
        .filter_map(|id| Some((id, id.base(), id.period()?)))
        .collect();
    for (board, period) in &closed {
        if !ended
            .iter()
            .any(|(_, base, p)| base.as_str() == board && p == period)
        {
            seasons.problems.push(format!(
                "{board}: period {period} closed, but it has no entry"
            ));
        }
    }
    let mut drained = false;
    for (id, base, period) in ended {
        if closed.contains(&(base.to_string(), period.to_owned())) {
            seasons.closed_by_pass += 1;
        } else if corrupted.iter().any(|(b, _)| b == id.as_str()) {
            if !drained {
                // The pass repaired the members; their held rows now project.
                wait_drained(stack, &BTreeSet::new(), Duration::from_secs(30)).await?;
                drained = true;
            }
            match periods::close(&stack.db, &base, period).await? {
                periods::CloseOutcome::Closed(_) => seasons.closed_after += 1,
                other => {
                    seasons.problems.push(format!(
                        "{id}: not closed by the pass (rows held at a corrupted member), and a \
                         close after the drain found {other:?}"
                    ));
                    continue;
                }
            }
        } else {
            seasons.problems.push(format!(
                "{id}: ended before the pass, with entries, but the pass did not close it"
            ));
            continue;
        }
        let source = stack.placed_source(id).await?;
        // Every close verifies: digest, count, each row against its user's newest event in
        // the period (a ban and an unban after it re-version the row without an event, which
        // verify allows for: the run found it calling such rows disagreements), and every user
        // left out explained.
        match periods::verify(&stack.db, &base, period).await? {
            Some(v) if v.holds() => seasons.verified += 1,
            other => seasons
                .problems
                .push(format!("{id}: the close does not verify: {other:?}")),
        }
        let path = format!("/v1/boards/{base}/periods/{period}/standings");
        let (status, body) = get(stack, &path, &base, "limit=1000").await?;
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let spec = spec_of(id).unwrap_or(&SPECS[0]);
        let frozen: Placed = answer["standings"]
            .as_array()
            .map(|s| {
                s.iter()
                    .map(|e| {
                        let n = |k: &str| e[k].as_i64().unwrap_or(i64::MIN);
                        (
                            e["user_id"].as_str().unwrap_or_default().to_owned(),
                            (n("score"), n("version"), n("tie")),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut differences = Vec::new();
        diff(
            &mut differences,
            id.as_str(),
            "the frozen standings",
            &source,
            &frozen,
        );
        let in_order = page_scores(&answer["standings"]) == ranking(spec.sort, &source);
        if status == Some(200)
            && in_order
            && differences.is_empty()
            && answer["entries"].as_u64() == Some(source.len() as u64)
            && answer["next"].is_null()
        {
            seasons.standings_equal += 1;
        } else {
            seasons.problems.push(format!(
                "{id}: the frozen standings (answered {status:?}, {} entries, in order: \
                 {in_order}) are not PostgreSQL's {} visible entries",
                answer["entries"],
                source.len()
            ));
            seasons.problems.extend(differences);
        }
    }
    Ok(())
}

/// The comparison of every board with PostgreSQL after the drain, before any pass.
#[derive(Default)]
struct BeforeRepair {
    whole: usize,
    not_whole: usize,
    /// Boards with no visible entry (never sealed: see `before_repair`).
    empty: usize,
    /// Boards not whole whose bounded read answered from PostgreSQL with its entries.
    read_from_database: usize,
    /// Boards not whole that the requested rebuild made whole and equal to PostgreSQL.
    rebuilt_equal: usize,
    /// The longest of those rebuilds, from the read that asked for it.
    rebuilt_max: Option<Duration>,
    /// Members of whole boards that differed, each at a member chaos corrupted.
    corrupted_differences: usize,
    problems: Vec<String>,
}

async fn chaos(
    stack: &Stack,
    redis: &mut RedisServer,
    options: &Options,
) -> anyhow::Result<Report> {
    let started = Instant::now();
    let faults: Vec<Fault> = if options.faults.is_empty() {
        FAULTS.to_vec()
    } else {
        let set: BTreeSet<Fault> = options.faults.iter().copied().collect();
        set.into_iter().collect()
    };
    let api = stack.start_api()?;
    declare(stack).await?;
    let clock = DbClock::measure(stack).await?;
    let mut projectors = (0..options.projectors.max(1))
        .map(|_| stack.start(PROJECTOR, &[]))
        .collect::<anyhow::Result<Vec<Daemon>>>()?;
    let mut reconciler = stack.start(RECONCILER, &[])?;
    // Its admin server bound a port of its own choice (`127.0.0.1:0`) and logged it.
    let reconciler_admin = &reconciler
        .wait_for_addr("admin server (healthz", Duration::from_secs(30))?
        .to_string();
    // The daemon's first pass runs at start-up, on the empty database; wait for it, so that
    // every pass counted from here on would be one during the load.
    let passes_at_start = startup_pass(reconciler_admin).await?;

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let load_started = Instant::now();
    let deadline = load_started + options.duration;
    let api_addr = stack.api_addr()?;
    let clients: Vec<_> = (0..options.clients.max(1))
        .map(|i| {
            tokio::spawn(client(
                api_addr,
                stack.bearer.clone(),
                ledger.clone(),
                Rng(options.seed ^ (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)),
                deadline,
            ))
        })
        .collect();
    // One moderation loop (one action at a time: its order is the database's, see
    // `moderation`), with choices of its own from the seed.
    let moderator = tokio::spawn(moderation::moderator(
        api_addr,
        stack.bearer.clone(),
        ledger.clone(),
        Rng(options.seed ^ 0x6d6f_6465_7261_7465),
        load_started,
        deadline,
    ));

    let mut rng = Rng(options.seed);
    let mut probes = Probes::default();
    let mut injected: BTreeMap<Fault, u64> = faults.iter().map(|f| (*f, 0)).collect();
    // Every kind once per round, in a random order: a short run still tries them all.
    let mut round: Vec<Fault> = Vec::new();
    // A kind not injected yet by the deadline (a slow fault, such as a Redis restart timed
    // until honest, can take most of a 12 s run) is still injected, after the load, within a
    // bound: the contract is checked under every kind in every run.
    let catch_up = deadline + Duration::from_secs(60);
    while Instant::now() < deadline
        || (Instant::now() < catch_up && injected.values().any(|n| *n == 0))
    {
        tokio::time::sleep(Duration::from_millis(200 + rng.below(600))).await;
        if round.is_empty() {
            round = faults.clone();
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let Some(fault) = round.pop() else { continue };
        if Instant::now() >= deadline && injected.get(&fault).is_some_and(|n| *n > 0) {
            continue;
        }
        if inject(fault, stack, redis, &mut projectors, &mut rng, &mut probes).await? {
            *injected.entry(fault).or_default() += 1;
        } else {
            // Nothing to act on yet (an empty board early in the run): try it again at the
            // end of this round rather than skip the kind.
            round.insert(0, fault);
        }
    }
    for c in clients {
        c.await.context("a client task failed")?;
    }
    moderator.await.context("the moderation loop failed")?;
    let load_secs = options.duration.as_secs_f64();

    // The faults have stopped: every process up, the outbox drained. No pass has run.
    if !redis.ping() {
        tokio::task::block_in_place(|| redis.restart())?;
    }
    for p in projectors.iter_mut() {
        if !p.is_running() {
            *p = stack.start(PROJECTOR, &[])?;
        }
    }
    let drained = wait_drained(stack, &probes.corrupted, Duration::from_secs(120)).await?;
    // No command comes after the drain: the periods' contents are final but for the
    // moderation below. Read now, `period=previous` most likely names the last period with
    // entries (or the one before it, when the last is still open).
    let mut seasons = SeasonChecks::default();
    period_reads(stack, &mut seasons).await?;
    // The boards compared from here on: the boards that do not reset and every period with an
    // entry or an event (no new one appears: a ban or unban writes only entries that exist).
    let boards = run_boards(stack).await?;
    // A board lost after the last command: nothing writes to it again, so only a read can
    // find it. This makes every run's comparison meet a board that is not whole (one with a
    // visible entry: one without is never whole, see `before_repair`).
    let mut with_entries = Vec::new();
    for id in &boards {
        if !stack.placed_source(id).await?.is_empty() {
            with_entries.push(id);
        }
    }
    let lost = with_entries
        .get(rng.below(with_entries.len() as u64) as usize)
        .copied()
        .cloned()
        .context("no board has a visible entry after the load")?;
    {
        let keys = stack.store.keys();
        let mut conn = stack.store.connection().await?;
        let _: i64 = redis::cmd("UNLINK")
            .arg(keys.scores(&lost))
            .arg(keys.versions(&lost))
            .arg(keys.meta(&lost))
            .query_async(&mut conn)
            .await?;
    }
    let before = before_repair(stack, &boards, &probes.corrupted).await?;
    // Every board is whole now. A last ban, removal and unban, drained, and every board compared
    // again: no rebuild follows them, so the projector's handling of each is what is compared
    // (see `moderation::after_the_faults`). The removal's candidates are the boards that do not
    // reset: a removal names a board, and the api removes nothing from a period (api.md,
    // Moderation); a ban reaches every period of its user.
    let mut visible: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for spec in SPECS.iter().filter(|s| s.period_secs.is_none()) {
        let users = stack.placed_source(&BoardId::parse(spec.name)?).await?;
        visible.insert(spec.name, users.into_keys().collect());
    }
    let after_applied = moderation::after_the_faults(
        api_addr,
        &stack.bearer,
        &ledger,
        &mut rng,
        load_started,
        &visible,
        &probes.corrupted,
    )
    .await;
    wait_drained(stack, &probes.corrupted, Duration::from_secs(60)).await?;
    let mut after_equal = 0;
    let mut after_problems = Vec::new();
    for id in &boards {
        let board = id.as_str();
        let source = stack.placed_source(id).await?;
        let (seal, projection) = stack.sealed_projection(id).await?;
        // A board with no visible entry is never sealed (see `before_repair`); it must hold
        // nothing, which the comparison below checks.
        if seal != Seal::Whole && !source.is_empty() {
            after_problems.push(format!(
                "{board}: not whole ({seal:?}) after the moderation that followed the faults"
            ));
            continue;
        }
        let differences: Vec<String> = projection_differences(board, &source, &projection)
            .into_iter()
            .filter(|(user, _)| !probes.corrupted.contains(&(board.to_owned(), user.clone())))
            .map(|(_, d)| format!("after the moderation that followed the faults: {d}"))
            .collect();
        if differences.is_empty() {
            after_equal += 1;
        }
        after_problems.extend(differences);
    }
    let passes_before = reconciler_passes(reconciler_admin).await? - passes_at_start;
    let rebuilds = reconciler_rebuilds(reconciler_admin).await.unwrap_or(-1.0);
    tokio::task::block_in_place(|| reconciler.terminate(Duration::from_secs(15)));
    // The pass closes the periods that have ended by then: so that it must close every period
    // with entries, it starts only once the last of them has ended (usually long since).
    wait_periods_ended(stack, &boards, &mut seasons).await?;
    let pass = stack.reconcile_once(&[]).await?;
    // The projectors still run: a period whose close waits for rows held at a corrupted member
    // is closed once the repaired member's rows are projected (`check_closes`).
    check_closes(stack, &boards, &probes.corrupted, &mut seasons).await?;
    for p in projectors.iter_mut() {
        tokio::task::block_in_place(|| p.terminate(Duration::from_secs(15)));
    }

    let ledger = std::mem::take(&mut *ledger.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);
    let mut mismatches: Vec<String> = ledger.violations.clone();
    mismatches.extend(probes.problems.iter().cloned());
    mismatches.extend(before.problems.iter().cloned());
    mismatches.extend(after_problems);
    if passes_before != 0.0 {
        mismatches.push(format!(
            "{passes_before} reconciler pass(es) ran during the load or before the comparison"
        ));
    }
    let corruptions: u64 = [
        Fault::CorruptScore,
        Fault::CorruptVersion,
        Fault::DeleteMember,
    ]
    .iter()
    .map(|f| injected.get(f).copied().unwrap_or(0))
    .sum();
    let totals = &pass["totals"];
    let ahead = totals["ahead"].as_u64().unwrap_or(u64::MAX);
    let repairs = totals["repaired"]
        .as_u64()
        .unwrap_or(u64::MAX)
        .saturating_add(totals["removed"].as_u64().unwrap_or(u64::MAX));
    if ahead != 0 {
        mismatches.push(format!(
            "the final pass found {ahead} row(s) ahead of PostgreSQL"
        ));
    }
    if repairs > corruptions {
        mismatches.push(format!(
            "the final pass repaired {repairs} member(s), more than the {corruptions} corruption(s) injected"
        ));
    }
    mismatches.extend(check(stack, &ledger, &clock, &mut seasons).await?);
    mismatches.extend(seasons.problems.iter().cloned());
    // The moderation ledger, each action with what the api answered and when, beside the report.
    let banned_at_end = moderation::expectation(&ledger.moderation.applied, &mut Vec::new())
        .banned
        .len();
    let actions: Vec<serde_json::Value> = ledger
        .moderation
        .applied
        .iter()
        .map(|m| m.to_json())
        .collect();
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("creating {}", options.out.display()))?;
    std::fs::write(
        options.out.join("moderation.json"),
        serde_json::to_string_pretty(&actions)?,
    )?;
    if !drained.elsewhere.is_empty() || drained.parked != 0 {
        mismatches.push(format!(
            "outbox after the drain: rows pending at {} member(s) chaos did not corrupt ({:?}), {} parked",
            drained.elsewhere.len(),
            &drained.elsewhere[..drained.elsewhere.len().min(5)],
            drained.parked
        ));
    }
    if !mismatches.is_empty() {
        let mut daemons = vec![
            ("api".to_owned(), &api),
            ("reconciler".to_owned(), &reconciler),
        ];
        daemons.extend(
            projectors
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("projector-{i}"), p)),
        );
        keep_logs(&options.out, &daemons);
    }

    let ms = |d: Duration| format!("{:.0}", d.as_secs_f64() * 1000.0);
    let max_ms = |ds: Vec<Duration>| ds.into_iter().max().map_or_else(|| "–".to_owned(), ms);
    let mut md = String::from("# ledgerboard chaos run\n\n");
    md.push_str(&format!(
        "Seed {}, {} s of load and faults ({:.0} s with the drain and checks), {} clients, {} projectors.\n\n",
        options.seed,
        options.duration.as_secs(),
        started.elapsed().as_secs_f64(),
        options.clients,
        options.projectors
    ));
    md.push_str(
        "Boards: chaos-a undeclared add (deltas); chaos-b declared best, ascending, earliest \
         (scores 0 to 199); chaos-c declared latest, descending, earliest (scores 0 to 199); \
         chaos-d declared best, descending, earliest, reset every 2 s (scores 0 to 199), each \
         period a board of its own (`chaos-d~<period id>`), compared as one.\n\n",
    );
    let or_dash = |n: Option<&usize>| n.map_or_else(|| "–".to_owned(), usize::to_string);
    let named_read = |which: &str| {
        seasons
            .named_reads
            .iter()
            .find(|r| r.0 == which)
            .map_or_else(|| "–".to_owned(), |r| format!("{} ({} entries)", r.1, r.2))
    };
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
            "moderation: bans applied",
            ledger.moderation.count("ban").to_string(),
        ),
        (
            "moderation: unbans applied",
            ledger.moderation.count("unban").to_string(),
        ),
        (
            "moderation: removals applied",
            ledger.moderation.count("remove").to_string(),
        ),
        (
            "moderation: removals sent while a command of the member was in flight",
            ledger.moderation.racing_removals.to_string(),
        ),
        (
            "moderation: entries removed",
            ledger.moderation.entries_removed().to_string(),
        ),
        (
            "moderation: users banned at the end",
            banned_at_end.to_string(),
        ),
        (
            "moderation: repeats answered 200 with the first outcome",
            ledger.moderation.duplicates_confirmed.to_string(),
        ),
        (
            "moderation: id reuses refused 409",
            ledger.moderation.conflicts_refused.to_string(),
        ),
        (
            "moderation: retries after an answer was lost / left unresolved",
            format!(
                "{} / {}",
                ledger.moderation.retries, ledger.moderation.unresolved
            ),
        ),
        (
            "Redis restarted empty: first honest bounded read, ms (max)",
            max_ms(probes.restarts.iter().map(|r| r.0).collect()),
        ),
        (
            "Redis restarted empty: projection whole again, ms (max)",
            max_ms(probes.restarts.iter().filter_map(|r| r.1).collect()),
        ),
        (
            "backlog: rows pending when the projectors restarted (max)",
            probes
                .backlogs
                .iter()
                .map(|b| b.0)
                .max()
                .map_or_else(|| "–".to_owned(), |n| n.to_string()),
        ),
        (
            "backlog: lag_ms a bounded read stated then (min)",
            probes
                .backlogs
                .iter()
                .map(|b| b.1)
                .min()
                .map_or_else(|| "–".to_owned(), |n| n.to_string()),
        ),
        (
            "backlog: drained below 100 rows, ms (max)",
            max_ms(probes.backlogs.iter().filter_map(|b| b.2).collect()),
        ),
        (
            "reconciler passes during the load and before the comparison",
            format!("{passes_before:.0}"),
        ),
        (
            "reconciler rebuilds served (requested, outcome done)",
            format!("{rebuilds:.0}"),
        ),
        (
            "board deleted after the drain (so one is not whole)",
            lost.to_string(),
        ),
        (
            "before repair: boards compared, whole / not whole / no visible entry (never sealed)",
            format!(
                "{}: {} / {} / {}",
                before.whole + before.not_whole + before.empty,
                before.whole,
                before.not_whole,
                before.empty
            ),
        ),
        (
            "before repair: whole boards' differing members, all at corrupted members",
            before.corrupted_differences.to_string(),
        ),
        (
            "before repair: not whole, read from PostgreSQL / rebuilt equal",
            format!("{} / {}", before.read_from_database, before.rebuilt_equal),
        ),
        (
            "before repair: slowest rebuild after the read, ms",
            before.rebuilt_max.map_or_else(|| "–".to_owned(), ms),
        ),
        (
            "after the faults: moderation actions applied / boards whole and equal after their drain",
            format!("{after_applied} / {after_equal}"),
        ),
        (
            "periods: chaos-d periods with entries / accepted commands per period, min / max",
            format!(
                "{} / {} / {}",
                seasons.commands.len(),
                or_dash(seasons.commands.values().min()),
                or_dash(seasons.commands.values().max())
            ),
        ),
        (
            "periods: accepted commands in flight across a boundary (each in the period its answer named, open while it was in flight)",
            seasons.across_boundary.to_string(),
        ),
        (
            "periods: after the drain, period=current / period=previous read (strong) named",
            format!("{} / {}", named_read("current"), named_read("previous")),
        ),
        (
            "periods: closed by the final pass / after it (rows held at a corrupted member)",
            format!("{} / {}", seasons.closed_by_pass, seasons.closed_after),
        ),
        (
            "periods: closes verified (holds) / frozen standings equal to the period's ranking",
            format!("{} / {}", seasons.verified, seasons.standings_equal),
        ),
        (
            "periods: period=<id> top reads equal to the period's ranking",
            seasons.id_reads_equal.to_string(),
        ),
        ("final pass: rows checked", totals["checked"].to_string()),
        (
            "final pass: drift found (missing+stale+ahead+corrupt+orphan)",
            drift(totals).to_string(),
        ),
        ("final pass: ahead", totals["ahead"].to_string()),
        (
            "final pass: repaired / removed",
            format!("{} / {}", totals["repaired"], totals["removed"]),
        ),
        (
            "final pass: repairs / corruptions injected",
            format!("{repairs} / {corruptions}"),
        ),
        (
            "outbox after the drain: members with rows pending elsewhere / at corrupted members (held for the repair) / parked rows",
            format!(
                "{} / {} / {}",
                drained.elsewhere.len(),
                drained.held_at_corrupted,
                drained.parked
            ),
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
        "\nDuring the load one moderation loop bans, unbans and removes entries through \
         `POST /v1/moderation` (one action at a time, so its order is the database's commit \
         order; half the removals race a command of the member in flight), repeats \
         action ids (200, the first outcome) and reuses them with another reason (409); each \
         action applied, with the api's answer and when it came, is in `moderation.json` beside \
         this report.\n\n\
         Before any reconciliation pass (none ran during the load), after the drain: every whole \
         board equals `user_scores`' visible entries except at members chaos corrupted; every \
         board not whole is read through the api from PostgreSQL with PostgreSQL's visible \
         entries, then rebuilt by the requested rebuild and equal. Then, every board whole, a last \
         ban, removal and unban (none at a corrupted member), drained, and every board whole and \
         equal to the visible entries again: no rebuild follows them to mend a projector that \
         mishandles one. Then one pass: nothing ahead, \
         no more repairs than corruptions injected. Checked after it: every accepted command has \
         exactly one event with its board, user and value and no other event exists; every \
         member is what its board's rule makes of the accepted commands recorded above the \
         version its last removal left in `removed_entries` (chaos-a, add: the sum of the deltas; \
         chaos-b, best ascending: the lowest submission, each event recorded improving beating \
         the one before; chaos-c, latest: the submission of the highest recorded version; the \
         version is the removal's, plus one per command (improving one on chaos-b), plus one per \
         ban or unban whose answer lists the entry since), and a member removed with no command \
         after has no row; `banned_users` holds exactly the users whose last applied ban or \
         unban is a ban, their entries are hidden with their scores intact and every other entry \
         is visible; `removed_entries` holds exactly the members a removal took an entry from; \
         each answer agrees with the state the actions before it left (a ban changes something \
         only for a user not banned, a removed entry was hidden only if its user was banned); \
         ties are 0 on chaos-a and on the earliest boards unique and of the board's sign; every \
         board's sorted set and version hash equal `user_scores`' visible entries (score, version \
         and tie), so no banned user and no removed entry is in Redis, and a bounded top read \
         lists them in order and no banned user; after the drain no outbox row is parked, and \
         none is pending except at members chaos corrupted, whose rows the projection script \
         refuses until the repair (fail closed). The backlog fault is this run's scale; a \
         backlog of 1,000,000 rows is tested in `crates/api/tests/projection_truth.rs`.\n\n\
         Periods: every check above runs on each period of chaos-d with an entry, as a board \
         of its own (`chaos-d~<period id>`), with the corruptions aimed at the current period \
         of chaos-d when it is picked. Each accepted command's event is in the period its \
         answer named (a duplicate names the first answer's), that period was open by the \
         database clock while the command was in flight, and each period's entries are what \
         the commands that named it make of it. After the drain a strong `period=current` and \
         `period=previous` read named the database's periods and held their entries. The pass \
         started once every period with entries had ended; it closed each of them and nothing \
         else (a period whose rows were held at a corrupted member is closed after the drain \
         instead, as `lbctl period close` would); for each close `periods::verify` holds (a ban \
         and an unban re-version rows without an event; verify allows for them), the frozen \
         standings read through the api \
         are the period's visible entries in its order, and a `period=<id>` top read gives \
         them too. A removal naming chaos-d takes nothing (its entries are in its periods, \
         which the api cannot name yet).\n",
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
    probes: &mut Probes,
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
        Fault::RestartRedisEmpty => {
            let board =
                probed_board(stack, BOARDS[rng.below(BOARDS.len() as u64) as usize]).await?;
            // SHUTDOWN NOSAVE, then the dump of an earlier SAVE deleted: the server comes back
            // as one without persistence does, empty. No pass runs, so only the seal, the
            // reads and the requested rebuild stand between the loss and a wrong answer.
            tokio::task::block_in_place(|| {
                let _ = redis.command(&["SHUTDOWN", "NOSAVE"]);
                redis.crash();
                redis.restart()
            })?;
            honest_after_restart(stack, &board, probes).await?;
        }
        Fault::Backlog => backlog(stack, projectors, rng, probes).await?,
        Fault::TerminateSessions => {
            let client = stack.db.client().await?;
            client
                .query_one(TERMINATE_BACKENDS, &[&stack.db_name])
                .await?;
        }
        Fault::CorruptScore | Fault::CorruptVersion | Fault::DeleteMember => {
            // On the board that resets, its current period: the one the clients write to.
            let board = BoardId::parse(BOARDS[rng.below(BOARDS.len() as u64) as usize])?;
            let board = match periods::current(&stack.db, &board).await? {
                Some(p) => board.in_period(&p.current)?,
                None => board,
            };
            let keys = stack.store.keys();
            let mut conn = stack.store.connection().await?;
            let member: Option<String> = redis::cmd("ZRANDMEMBER")
                .arg(keys.scores(&board))
                .query_async(&mut conn)
                .await?;
            let Some(member) = member else {
                return Ok(false);
            };
            // The member is spelt with its tie key on earliest boards; the versions hash and
            // the checks go by user id.
            let user = member::user_of(&member)
                .map_or_else(|| member.clone(), |(user, _)| user.to_owned());
            if fault != Fault::DeleteMember {
                probes
                    .corrupted
                    .insert((board.as_str().to_owned(), user.clone()));
            }
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
                        .arg(&user)
                        .arg(value);
                }
                _ => {
                    pipe.cmd("ZREM")
                        .arg(keys.scores(&board))
                        .arg(&member)
                        .cmd("HDEL")
                        .arg(keys.versions(&board))
                        .arg(&user);
                }
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
    }
    Ok(true)
}

/// The board the Redis restart's probe reads: `name` itself, or on a board that resets its
/// latest period with a visible entry (the current one under load; `period=<id>` reads it). The
/// probe waits for the projection to be whole again, and a period with no visible entry (one
/// just begun, or the current one once the load is over, when the fault is injected after it)
/// is never sealed.
async fn probed_board(stack: &Stack, name: &str) -> anyhow::Result<BoardId> {
    let board = BoardId::parse(name)?;
    if spec(name).period_secs.is_none() {
        return Ok(board);
    }
    // Sorted by id: a board's periods in time order.
    for id in run_boards(stack).await?.into_iter().rev() {
        if id.base() == board && id.period().is_some() && !stack.source(&id).await?.is_empty() {
            return Ok(id);
        }
    }
    Ok(board)
}

/// After Redis came back empty: bounded reads of `board` every 10 ms, each bounded to 1 s,
/// until one finds the board's projection whole again (at most [`REBUILD_LIMIT`]). The first
/// answer must come within [`HONEST_READ_LIMIT`], and every answer must come from PostgreSQL
/// or from a whole projection (one a rebuild sealed after the restart: nothing else can seal
/// an empty Redis).
async fn honest_after_restart(
    stack: &Stack,
    board: &BoardId,
    probes: &mut Probes,
) -> anyhow::Result<()> {
    let restarted = Instant::now();
    let mut honest = None;
    let mut rebuilt = None;
    while rebuilt.is_none() && restarted.elapsed() < REBUILD_LIMIT {
        if let Some(read) = bounded_read(stack, board, "").await? {
            let f = &read["freshness"];
            let source = f["source"].as_str().unwrap_or_default();
            let projection = f["projection"].as_str();
            if source == "database" || projection == Some("whole") {
                honest.get_or_insert(restarted.elapsed());
            } else {
                probes.problems.push(format!(
                    "{board}: a bounded read after Redis restarted empty answered from {source}                      with projection {projection:?}"
                ));
            }
            if projection == Some("whole") {
                rebuilt = Some(restarted.elapsed());
            } else if honest.is_some()
                && page_scores(&read["entries"]).is_empty()
                && stack.source(board).await?.is_empty()
            {
                // Nothing to rebuild: a board with no visible entry is never sealed.
                break;
            }
        }
        if honest.is_none() && restarted.elapsed() > HONEST_READ_LIMIT {
            probes.problems.push(format!(
                "{board}: no honest bounded read within {HONEST_READ_LIMIT:?} of Redis restarting empty"
            ));
            honest = Some(restarted.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A board with no rows yet has nothing to rebuild; one with rows must come back.
    if rebuilt.is_none() && !stack.source(board).await?.is_empty() {
        probes.problems.push(format!(
            "{board}: not whole again within {REBUILD_LIMIT:?} of Redis restarting empty"
        ));
    }
    probes
        .restarts
        .push((honest.unwrap_or(restarted.elapsed()), rebuilt));
    Ok(())
}

/// A bounded read of the board's top, as JSON; None when it did not answer 200 within 1 s
/// (Redis coming back, sessions ended), an error when the api was never started. `board` is a
/// stored id: a period is read as a client reads it, `period=<id>` on its board; a board that
/// resets named without a period reads its current one. `params` are further query parameters
/// (`limit=1000`, `period=previous`), "" for none.
async fn bounded_read(
    stack: &Stack,
    board: &BoardId,
    params: &str,
) -> anyhow::Result<Option<serde_json::Value>> {
    let (status, body) = get(
        stack,
        &format!("/v1/boards/{}/top", board.base()),
        board,
        params,
    )
    .await?;
    Ok(match status {
        Some(200) => serde_json::from_str(&body).ok(),
        _ => None,
    })
}

/// A GET of the api at `path` (1 s at most) with `board`'s period (if it is one) and `params`
/// as its query: the status (None when no answer came) and the body; an error when the api was
/// never started.
async fn get(
    stack: &Stack,
    path: &str,
    board: &BoardId,
    params: &str,
) -> anyhow::Result<(Option<u16>, String)> {
    let mut query: Vec<String> = board
        .period()
        .map(|p| format!("period={p}"))
        .into_iter()
        .collect();
    if !params.is_empty() {
        query.push(params.to_owned());
    }
    let path = if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    };
    let headers = [("authorization", stack.bearer.as_str())];
    let addr = stack.api_addr()?;
    Ok(
        match http::request(
            addr,
            "GET",
            &path,
            &headers,
            String::new(),
            Duration::from_secs(1),
        )
        .await
        {
            Ok((status, body)) => (Some(status), body),
            Err(_) => (None, String::new()),
        },
    )
}

/// Every projector stopped (SIGTERM) for [`BACKLOG_FOR`] while the clients go on, a bounded
/// read while they are down, then all started again and the backlog timed until fewer than
/// 100 rows are pending (at most 30 s; under load it never reaches 0).
async fn backlog(
    stack: &Stack,
    projectors: &mut [Daemon],
    rng: &mut Rng,
    probes: &mut Probes,
) -> anyhow::Result<()> {
    tokio::task::block_in_place(|| {
        for p in projectors.iter_mut() {
            p.terminate(Duration::from_secs(15));
        }
    });
    tokio::time::sleep(BACKLOG_FOR).await;
    let board = BOARDS[rng.below(BOARDS.len() as u64) as usize];
    let mut lag = -1;
    if let Some(read) = bounded_read(stack, &BoardId::parse(board)?, "").await? {
        let f = &read["freshness"];
        lag = f["lag_ms"].as_i64().unwrap_or(-1);
        // Over api.max_lag_ms (2000 by default) a bounded read must leave the projection.
        if lag > 2_000 && f["source"] != "database" {
            probes.problems.push(format!(
                "{board}: a bounded read with lag_ms {lag} answered from {}",
                f["source"]
            ));
        }
    }
    let pending = ledgerboard_core::db::outbox_status(&stack.db)
        .await
        .map_or(-1, |s| s.pending);
    for p in projectors.iter_mut() {
        *p = tokio::task::block_in_place(|| stack.start(PROJECTOR, &[]))?;
    }
    let restarted = Instant::now();
    let mut drained = None;
    while restarted.elapsed() < Duration::from_secs(30) {
        if let Ok(s) = ledgerboard_core::db::outbox_status(&stack.db).await
            && s.pending < 100
        {
            drained = Some(restarted.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    probes.backlogs.push((pending, lag, drained));
    Ok(())
}

/// Every board compared with PostgreSQL after the drain and before any pass. A whole board
/// (its seal and its keys read in one MULTI/EXEC) must equal `user_scores`, except at members
/// chaos corrupted. A board that is not whole is never counted as equal: a bounded read must
/// answer from PostgreSQL with PostgreSQL's entries, and the rebuild that read requested must
/// make the board whole and equal within [`REBUILD_LIMIT`]. Every board is read before any is
/// waited for, so that the rebuilds the reads requested run together (a Redis lost during the
/// load leaves every period that ended before it not whole, and nothing but a read asks for
/// them again).
async fn before_repair(
    stack: &Stack,
    boards: &[BoardId],
    corrupted: &BTreeSet<(String, String)>,
) -> anyhow::Result<BeforeRepair> {
    let mut out = BeforeRepair::default();
    let mut rebuilding = Vec::new();
    for id in boards {
        let board = id.as_str();
        let source = stack.placed_source(id).await?;
        let (seal, projection) = stack.sealed_projection(id).await?;
        if source.is_empty() && seal != Seal::Whole {
            // No visible entry (a period whose every entry a ban hid): a rebuild switches such
            // a board in unsealed (`reconciler/src/rebuild.rs`: a board that does not exist
            // leaves nothing in Redis), so it is never whole. It must hold nothing, and a
            // bounded read must answer from PostgreSQL with nothing.
            out.empty += 1;
            out.problems.extend(
                projection_differences(board, &source, &projection)
                    .into_iter()
                    .map(|(_, d)| d),
            );
            match bounded_read(stack, id, "limit=1000").await? {
                Some(read)
                    if read["freshness"]["source"] == "database"
                        && page_scores(&read["entries"]).is_empty() => {}
                other => out.problems.push(format!(
                    "{board}: no visible entry, but a bounded read answered {other:?}"
                )),
            }
            continue;
        }
        if seal == Seal::Whole {
            out.whole += 1;
            for (user, d) in projection_differences(board, &source, &projection) {
                if corrupted.contains(&(board.to_owned(), user.clone())) {
                    out.corrupted_differences += 1;
                } else {
                    out.problems.push(d);
                }
            }
            continue;
        }
        out.not_whole += 1;
        let asked = Instant::now();
        // limit=1000 covers every member (USERS = 200); the consistency is the default.
        let read = bounded_read(stack, id, "limit=1000").await?;
        match &read {
            None => out.problems.push(format!(
                "{board}: not whole ({seal:?}) and the bounded read failed"
            )),
            Some(read) => {
                let f = &read["freshness"];
                if f["source"] != "database" && f["projection"] != "whole" {
                    out.problems.push(format!(
                        "{board}: not whole ({seal:?}) but a bounded read answered from {} \
                         with projection {}",
                        f["source"], f["projection"]
                    ));
                } else if f["source"] == "database" {
                    out.read_from_database += 1;
                }
                let want = ranking(spec_of(id).unwrap_or(&SPECS[0]).sort, &source);
                let got = page_scores(&read["entries"]);
                if got != want {
                    out.problems.push(format!(
                        "{board}: the bounded read of a board not whole gave {} entries, not \
                         PostgreSQL's {} in its order",
                        got.len(),
                        want.len()
                    ));
                }
            }
        }
        let read_freshness = read.as_ref().map(|r| r["freshness"].to_string());
        rebuilding.push((id, source, asked, read_freshness));
    }
    // The reads asked for the rebuilds; the reconciler daemon serves them between passes.
    for (id, source, asked, read_freshness) in rebuilding {
        let board = id.as_str();
        loop {
            let (seal, projection) = stack.sealed_projection(id).await?;
            if seal == Seal::Whole {
                let differences = projection_differences(board, &source, &projection);
                if differences.is_empty() {
                    out.rebuilt_equal += 1;
                    let took = asked.elapsed();
                    out.rebuilt_max = Some(out.rebuilt_max.map_or(took, |m| m.max(took)));
                } else {
                    out.problems.extend(differences.into_iter().map(|(_, d)| d));
                }
                break;
            }
            if asked.elapsed() > REBUILD_LIMIT {
                out.problems.push(format!(
                    "{board}: still not whole ({seal:?}) {REBUILD_LIMIT:?} after the read (its freshness: {})",
                    read_freshness.as_deref().unwrap_or("none")
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(out)
}

/// The members where the projection differs from the source, each with its description.
/// Scores, versions and ties are compared: on an earliest board a member spelt with another tie
/// stands elsewhere among equal scores.
fn projection_differences(
    board: &str,
    source: &Placed,
    projection: &Placed,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (user, want) in source {
        if projection.get(user) != Some(want) {
            out.push((
                user.clone(),
                format!(
                    "{board}/{user}: Redis holds {:?} before repair, PostgreSQL {want:?}",
                    projection.get(user)
                ),
            ));
        }
    }
    for user in projection.keys().filter(|u| !source.contains_key(*u)) {
        out.push((
            user.clone(),
            format!("{board}/{user}: Redis holds a member PostgreSQL does not, before repair"),
        ));
    }
    out
}

/// A page's entries in rank order as (user, score): a read's `entries`, a closed period's
/// `standings`; a malformed entry shows as a user "" or a score of `i64::MIN`, so that it never
/// equals the source.
fn page_scores(entries: &serde_json::Value) -> Vec<(String, i64)> {
    entries
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["user_id"].as_str().unwrap_or_default().to_owned(),
                        e["score"].as_i64().unwrap_or(i64::MIN),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The board in rank order, as (user, score): the tuple (score, tie, user id in byte order),
/// greatest first on a descending board, smallest first on an ascending one, as every read
/// orders it (`definition::Order`).
fn ranking(sort: Sort, source: &Placed) -> Vec<(String, i64)> {
    let mut entries: Vec<(i64, i64, &[u8], &str)> = source
        .iter()
        .map(|(u, (s, _, t))| (*s, *t, u.as_bytes(), u.as_str()))
        .collect();
    entries.sort();
    if sort == Sort::Descending {
        entries.reverse();
    }
    entries
        .into_iter()
        .map(|(s, _, _, u)| (u.to_owned(), s))
        .collect()
}

/// The run's board named `board` (one of [`BOARDS`]).
fn spec(board: &str) -> &'static Spec {
    SPECS.iter().find(|s| s.name == board).unwrap_or(&SPECS[0])
}

/// The run's board a stored board id is, or is a period of: None for an id that is not one of
/// the run's, and for one that has a period exactly when its board does not reset (every
/// command of a board that resets lands in a period, none of another does).
fn spec_of(board: &BoardId) -> Option<&'static Spec> {
    let spec = SPECS.iter().find(|s| s.name == board.base().as_str())?;
    (spec.period_secs.is_some() == board.period().is_some()).then_some(spec)
}

/// Whether a stored board id (a board or one of its periods, as PostgreSQL, the outbox and a
/// ban's answer name it) is one of the run's.
fn of_the_run(board: &str) -> bool {
    BoardId::parse_stored(board)
        .ok()
        .as_ref()
        .and_then(spec_of)
        .is_some()
}

/// The boards the run compares, as stored: the boards that do not reset, and every period of
/// the one that does that holds an entry or an event (a period is a board of its own in
/// PostgreSQL and Redis; a period where nothing landed has nothing to compare). Any other board
/// id found is listed too, so that the checks report it.
async fn run_boards(stack: &Stack) -> anyhow::Result<Vec<BoardId>> {
    let mut boards: BTreeSet<BoardId> = SPECS
        .iter()
        .filter(|s| s.period_secs.is_none())
        .map(|s| BoardId::parse(s.name))
        .collect::<Result<_, _>>()?;
    let client = stack.db.client().await?;
    for r in client.query(STORED_BOARDS, &[]).await? {
        let raw: String = r.try_get(0)?;
        boards.insert(BoardId::parse_stored(&raw).with_context(|| format!("board id {raw:?}"))?);
    }
    Ok(boards.into_iter().collect())
}

/// Declares the run's declared boards through the api (the run's token has the `admin`
/// scope), before any command: a board's rule cannot change once it has entries.
async fn declare(stack: &Stack) -> anyhow::Result<()> {
    for spec in &SPECS {
        let Some(body) = spec.declaration else {
            continue;
        };
        let headers = [("authorization", stack.bearer.as_str())];
        let path = format!("/v1/boards/{}", spec.name);
        let (status, answer) = http::request(
            stack.api_addr()?,
            "PUT",
            &path,
            &headers,
            body.to_owned(),
            REQUEST_LIMIT,
        )
        .await
        .with_context(|| format!("declaring {}", spec.name))?;
        anyhow::ensure!(
            status == 200 || status == 201,
            "declaring {} answered {status}: {answer}",
            spec.name
        );
        // The check computes a period's end from `period_secs`: it must be the reset declared.
        let declared: serde_json::Value = serde_json::from_str(&answer)?;
        let reset = spec.period_secs.map(|n| format!("every {n}s"));
        anyhow::ensure!(
            declared["reset"].as_str() == Some(reset.as_deref().unwrap_or("never")),
            "{} was declared with reset {}, the run expects {reset:?}",
            spec.name,
            declared["reset"]
        );
    }
    Ok(())
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
                let (event, first) = &l.order[rng.below(l.order.len() as u64) as usize];
                l.accepted
                    .get(event)
                    .map(|c| (*event, c.clone(), first.clone()))
            }
        };
        let (event, command, kind) = match known {
            // A duplicate: the same command again must answer 200 with the first outcome.
            Some((event, command, first)) if roll < 10 => {
                (event, command, Sending::Duplicate(first))
            }
            // A conflicting reuse: the same event id with another value must be refused.
            Some((event, mut command, _)) => {
                // Deltas are within ±100: one more is another valid delta (never 0); scores
                // are below SCORES: one more is within the declared bounds.
                command.value = if spec(command.board).kind == BoardKind::Add && command.value == -1
                {
                    1
                } else {
                    command.value + 1
                };
                (event, command, Sending::Reuse)
            }
            None => {
                let event = rng.uuid();
                let board = BOARDS[rng.below(BOARDS.len() as u64) as usize];
                let user = format!("user-{:03}", rng.below(USERS));
                let value = if spec(board).kind == BoardKind::Add {
                    let magnitude = 1 + rng.below(100) as i64;
                    if rng.below(2) == 0 {
                        magnitude
                    } else {
                        -magnitude
                    }
                } else {
                    rng.below(SCORES) as i64
                };
                (event, Command { board, user, value }, Sending::New)
            }
        };
        let _in_flight = InFlight::begin(&ledger, command.board, &command.user);
        let sent = epoch_secs();
        let (status, body, retries) = send(api, &bearer, event, &command, deadline).await;
        let answered = epoch_secs();
        let mut l = lock(&ledger);
        l.sent += 1 + retries;
        l.retries += retries;
        match kind {
            Sending::Duplicate(first) => {
                // Period included: a repeat names the first run's period, even after a reset.
                let same_outcome = first.is_none_or(|f| outcome(&body) == Some(f));
                if status == Some(200) && body.contains(r#""duplicate":true"#) && same_outcome {
                    l.duplicates_confirmed += 1;
                } else if status.is_some() {
                    l.violations
                        .push(format!("duplicate of {event} answered {status:?}: {body}"));
                }
            }
            Sending::Reuse => {
                if status == Some(409) {
                    l.conflicts_refused += 1;
                } else if status.is_some() {
                    l.violations.push(format!(
                        "conflicting reuse of {event} answered {status:?}: {body}"
                    ));
                }
            }
            Sending::New => match status {
                // 200: an earlier attempt committed but its answer was lost; the duplicate's
                // answer is the first run's, period included.
                Some(201) | Some(200)
                    if status == Some(201)
                        || retries > 0 && body.contains(r#""duplicate":true"#) =>
                {
                    let stated = outcome(&body);
                    let period = stated.as_ref().and_then(|o| o.period.clone());
                    match (spec(command.board).period_secs, period) {
                        (Some(_), Some(period)) => {
                            l.landed.insert(
                                event,
                                Landed {
                                    period,
                                    sent,
                                    answered,
                                },
                            );
                        }
                        (None, None) => {}
                        (resets, period) => l.violations.push(format!(
                            "command {event} on {} (resets: {}) answered with period {period:?}: {body}",
                            command.board,
                            resets.is_some()
                        )),
                    }
                    l.accepted.insert(event, command);
                    l.order.push((event, stated));
                }
                None => {
                    l.unresolved.insert(event, command);
                }
                Some(s) => l
                    .violations
                    .push(format!("new command {event} answered {s}: {body}")),
            },
        }
    }
}

/// What a client sends: a new command, a duplicate of an accepted one (with what its first
/// answer stated), or a reuse of an accepted one's id with another value.
enum Sending {
    New,
    Duplicate(Option<Outcome>),
    Reuse,
}

/// The score, version and period a command's answer states.
fn outcome(body: &str) -> Option<Outcome> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    Some(Outcome {
        score: v["score"].as_i64()?,
        version: v["version"].as_i64()?,
        period: v["period"].as_str().map(str::to_owned),
    })
}

/// Now by the local clock, in seconds since the Unix epoch.
fn epoch_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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
    let field = if spec(command.board).kind == BoardKind::Add {
        "delta"
    } else {
        "score"
    };
    let body = format!(
        r#"{{"event_id":"{event}","user_id":"{}","{field}":{}}}"#,
        command.user, command.value
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

/// What the drain left: members with rows still pending (those at members chaos corrupted are
/// held back on purpose, see [`wait_drained`]) and the parked rows.
#[derive(Debug, Default)]
struct Drained {
    /// Pending at members chaos corrupted: the projection script refuses them (LBCORRUPT, fail
    /// closed) and they wait, in back-off, for the reconciler's repair.
    held_at_corrupted: usize,
    /// Pending anywhere else: a contract violation.
    elsewhere: Vec<(String, String)>,
    parked: i64,
}

/// Waits (up to `limit`) until no outbox row is pending but at members chaos corrupted.
async fn wait_drained(
    stack: &Stack,
    corrupted: &BTreeSet<(String, String)>,
    limit: Duration,
) -> anyhow::Result<Drained> {
    let started = Instant::now();
    loop {
        let client = stack.db.client().await?;
        let rows = client.query(PENDING_MEMBERS, &[]).await?;
        let mut drained = Drained::default();
        for row in rows {
            match row.get::<_, Option<i64>>(2) {
                Some(parked) => drained.parked = parked,
                None => {
                    let member: (String, String) = (row.get(0), row.get(1));
                    if corrupted.contains(&member) {
                        drained.held_at_corrupted += 1;
                    } else {
                        drained.elsewhere.push(member);
                    }
                }
            }
        }
        if drained.elsewhere.is_empty() || started.elapsed() > limit {
            return Ok(drained);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (up to 30 s) for the reconciler daemon's start-up pass, and returns the passes counted.
async fn startup_pass(admin: &str) -> anyhow::Result<f64> {
    let started = Instant::now();
    loop {
        match reconciler_passes(admin).await {
            Ok(n) if n >= 1.0 => return Ok(n),
            // The last answer goes into the error: a metric the reconciler does not export
            // must not read as a pass that is merely slow.
            last if started.elapsed() > Duration::from_secs(30) => anyhow::bail!(
                "the reconciler's start-up pass did not finish within 30 s (last: {last:?})"
            ),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn reconciler_passes(admin: &str) -> anyhow::Result<f64> {
    metric_sum(admin, "ledgerboard_reconcile_passes_total", "").await
}

async fn reconciler_rebuilds(admin: &str) -> anyhow::Result<f64> {
    metric_sum(
        admin,
        "ledgerboard_reconciler_rebuilds_total",
        "outcome=\"done\"",
    )
    .await
}

/// The sum of the samples of the reconciler's metric lines that start with `prefix` and
/// contain `label`; an error when no line does. The reconciler exports every series at 0 from
/// the start (`init_series`), so no line means a misspelt name, never 0: a "no pass ran"
/// check would pass on it.
async fn metric_sum(admin: &str, prefix: &str, label: &str) -> anyhow::Result<f64> {
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
    let samples: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with(prefix) && l.contains(label))
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .with_context(|| format!("a metric line without a number: {l:?}"))
        })
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(
        !samples.is_empty(),
        "the reconciler exports no {prefix} {label}"
    );
    Ok(samples.iter().sum())
}

/// What `score_events` records of one event: the command, the board it wrote (a period of the
/// command's board when that resets), and the version and `improved` it recorded.
struct Recorded {
    command: Command,
    written: BoardId,
    version: i64,
    improved: bool,
}

/// One accepted command of a member: its value, and the version and `improved` its event
/// recorded.
type Applied = (i64, i64, bool);

/// The contract, checked against PostgreSQL and Redis.
async fn check(
    stack: &Stack,
    ledger: &Ledger,
    clock: &DbClock,
    seasons: &mut SeasonChecks,
) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let client = stack.db.client().await?;
    let rows = client.query(EVENTS, &[]).await?;
    let mut events: HashMap<Uuid, Recorded> = HashMap::new();
    for r in &rows {
        let raw: String = r.try_get(1)?;
        let written = BoardId::parse_stored(&raw).ok();
        // A board not of the run, a period of a board that does not reset, or a board that
        // resets written without a period.
        let Some((written, spec)) = written.and_then(|w| spec_of(&w).map(|s| (w, s))) else {
            problems.push(format!("an event on {raw}, not a board of the run"));
            continue;
        };
        events.insert(
            r.try_get(0)?,
            Recorded {
                command: Command {
                    board: spec.name,
                    user: r.try_get(2)?,
                    value: r.try_get(3)?,
                },
                written,
                version: r.try_get(4)?,
                improved: r.try_get(5)?,
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
    // Per board as stored (a period of a board that resets) and member: each accepted command's
    // value, with the version and `improved` its event recorded. An answered command on a board
    // that resets counts in the period its answer named, which must be the one its event is in:
    // so each period's entries are expected from the commands whose answers named it, and none
    // from another period's.
    let mut applied: BTreeMap<BoardId, BTreeMap<&str, Vec<Applied>>> = BTreeMap::new();
    for (event, command) in &effective {
        match events.get(event) {
            Some(recorded) if recorded.command == **command => {
                let expected_in = match ledger.landed.get(event) {
                    Some(landed) => match recorded.written.in_period(&landed.period) {
                        Ok(period) => period,
                        Err(_) => {
                            problems.push(format!(
                                "event {event}: answered period {:?}, not a period id",
                                landed.period
                            ));
                            continue;
                        }
                    },
                    None => recorded.written.clone(),
                };
                if expected_in != recorded.written {
                    problems.push(format!(
                        "event {event}: its answer named {expected_in}, but it was recorded in {}",
                        recorded.written
                    ));
                }
                applied
                    .entry(expected_in)
                    .or_default()
                    .entry(command.user.as_str())
                    .or_default()
                    .push((command.value, recorded.version, recorded.improved));
            }
            Some(recorded) => problems.push(format!(
                "event {event}: recorded {:?}, accepted {command:?}",
                recorded.command
            )),
            None => problems.push(format!("accepted event {event} has no row in score_events")),
        }
    }
    for event in events.keys() {
        if !effective.contains_key(event) {
            problems.push(format!("event {event} recorded but never accepted"));
        }
    }
    problems.extend(in_flight_periods(stack, ledger, clock, seasons).await?);
    // Moderation: what the applied actions, in the loop's order (the database's commit order,
    // see `moderation`), make of each member, checked against what PostgreSQL keeps.
    let moderated = moderation::expectation(&ledger.moderation.applied, &mut problems);
    let mut removed_entries: BTreeMap<(String, String), i64> = BTreeMap::new();
    for r in client.query(REMOVED_ENTRIES, &[]).await? {
        removed_entries.insert((r.try_get(0)?, r.try_get(1)?), r.try_get(2)?);
    }
    let mut banned_users = BTreeSet::new();
    for r in client.query(BANNED_USERS, &[]).await? {
        banned_users.insert(r.try_get::<_, String>(0)?);
    }
    moderation::compare_state(&moderated, &removed_entries, &banned_users, &mut problems);
    // Every board as stored, each period of the board that resets as a board of its own.
    for id in run_boards(stack).await? {
        let board = id.as_str();
        let Some(spec) = spec_of(&id) else {
            problems.push(format!("{board}: PostgreSQL holds a board not of the run"));
            continue;
        };
        let mut want: Members = BTreeMap::new();
        for (user, commands) in applied.remove(&id).unwrap_or_default() {
            let member = (board.to_owned(), user.to_owned());
            // A removal's version splits the member's commands exactly (see `moderation`):
            // those recorded above it make the entry, those below it went with the removed one;
            // none can have it (it is the removal's own).
            let base = removed_entries.get(&member).copied().unwrap_or(0);
            if commands.iter().any(|c| c.1 == base) {
                problems.push(format!(
                    "{board}/{user}: a command recorded version {base}, the removal's"
                ));
            }
            let after: Vec<Applied> = commands.into_iter().filter(|c| c.1 > base).collect();
            let bumps = moderated.bumps.get(&member).copied().unwrap_or(0);
            match expected(spec.kind, after, base, bumps) {
                Ok(Some(t)) => {
                    want.insert(user.to_owned(), (t.score, t.version));
                }
                // No command after the last removal (or none at all): no entry.
                Ok(None) => {}
                Err(e) => problems.push(format!("{board}/{user}: {e}")),
            }
        }
        // Every entry, hidden ones included: a banned user's score stays intact.
        let mut scores: Members = BTreeMap::new();
        for r in client.query(MEMBERS, &[&board]).await? {
            let user: String = r.try_get(0)?;
            let hidden: bool = r.try_get(3)?;
            if hidden != moderated.banned.contains(&user) {
                problems.push(format!(
                    "{board}/{user}: PostgreSQL holds hidden = {hidden}, but the user's last \
                     applied ban or unban is {}",
                    if hidden {
                        "an unban (or none)"
                    } else {
                        "a ban"
                    }
                ));
            }
            scores.insert(user, (r.try_get(1)?, r.try_get(2)?));
        }
        diff(&mut problems, board, "PostgreSQL", &want, &scores);
        // The visible entries: what Redis and every read must hold, and nothing else.
        let source = stack.placed_source(&id).await?;
        problems.extend(tie_problems(board, spec, &source));
        let (_, projection) = stack.sealed_projection(&id).await?;
        diff(&mut problems, board, "Redis", &source, &projection);
        for user in projection.keys() {
            if moderated.banned.contains(user) {
                problems.push(format!("{board}/{user}: banned, but Redis holds it"));
            }
            if moderated
                .removed
                .contains(&(board.to_owned(), user.clone()))
                && !want.contains_key(user)
            {
                problems.push(format!(
                    "{board}/{user}: removed with no command after, but Redis holds it"
                ));
            }
        }
        // A bounded read (limit 1000 covers every member; a period read with `period=<id>`, as
        // a client reads a past period): PostgreSQL's visible entries in their order, and no
        // banned user.
        match bounded_read(stack, &id, "limit=1000").await? {
            None => problems.push(format!(
                "{board}: the bounded top read after the check failed"
            )),
            Some(read) => {
                let got = page_scores(&read["entries"]);
                for (user, _) in &got {
                    if moderated.banned.contains(user) {
                        problems.push(format!("{board}/{user}: banned, but the top read lists it"));
                    }
                }
                let want = ranking(spec.sort, &source);
                if read["period"].as_str() != id.period() {
                    problems.push(format!(
                        "{board}: the top read named period {}",
                        read["period"]
                    ));
                } else if got != want {
                    problems.push(format!(
                        "{board}: the top read gave {} entries, not PostgreSQL's {} visible ones \
                         in their order (freshness {})",
                        got.len(),
                        want.len(),
                        read["freshness"]
                    ));
                } else if id.period().is_some() {
                    seasons.id_reads_equal += 1;
                }
            }
        }
    }
    // A board or period the ledger expects entries on, but of which PostgreSQL holds nothing.
    for (board, members) in applied {
        problems.push(format!(
            "{board}: {} member(s) expected from accepted commands, but PostgreSQL holds no \
             entry or event of it",
            members.len()
        ));
    }
    Ok(problems)
}

/// The accepted commands on a board that resets, held to their time in flight: the period an
/// answer named must have been open (by the database clock) at some instant between the send
/// of the command's first attempt and its answer, since the statement read the clock in
/// between. Counts the commands per period, and those in flight across a boundary.
async fn in_flight_periods(
    stack: &Stack,
    ledger: &Ledger,
    clock: &DbClock,
    seasons: &mut SeasonChecks,
) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let named: Vec<String> = ledger
        .landed
        .values()
        .map(|l| l.period.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let client = stack.db.client().await?;
    let mut starts: HashMap<String, i64> = HashMap::new();
    for r in client.query(PERIOD_STARTS, &[&named]).await? {
        starts.insert(r.try_get(0)?, r.try_get(1)?);
    }
    for (event, landed) in &ledger.landed {
        *seasons.commands.entry(landed.period.clone()).or_default() += 1;
        let Some(secs) = ledger
            .accepted
            .get(event)
            .and_then(|c| spec(c.board).period_secs)
        else {
            continue;
        };
        let Some(start) = starts.get(&landed.period).copied() else {
            problems.push(format!(
                "event {event}: its answer named {:?}, not a period id",
                landed.period
            ));
            continue;
        };
        // Periods of `every <n>s` end at the next multiple of n seconds since the epoch (the
        // first one starts at the declaration, which need not be one).
        let end = start - start.rem_euclid(secs) + secs;
        let sent = landed.sent + clock.offset;
        let answered = landed.answered + clock.offset;
        if (start as f64) > answered + clock.slack || (end as f64) < sent - clock.slack {
            problems.push(format!(
                "event {event}: its answer named period {} ({start} to {end} s), but it was in \
                 flight from {sent:.3} to {answered:.3} s by the database clock",
                landed.period
            ));
        }
        if (sent / secs as f64).floor() != (answered / secs as f64).floor() {
            seasons.across_boundary += 1;
        }
    }
    Ok(problems)
}

/// A member as the check compares it with PostgreSQL: (score, version).
type Members = BTreeMap<String, (i64, i64)>;

/// The score and version a member's accepted commands make by the board's rule
/// ([`BoardKind::expected`]), from each command's value and the version and `improved` its
/// event recorded; an error naming what is wrong when the recorded events themselves break
/// the rule. `commands` are those after the member's last removal, whose version was `base`
/// (0: never removed), and `bumps` bans and unbans changed the entry since (one version each).
/// Concurrent commands of one member are applied in an order no client knows, so the order
/// comes from the recorded versions where the rule needs one:
/// - add: the sum of the deltas and their count (any order);
/// - best: the best value by the sort (any order); the version is `base`, the number of events
///   recorded as improving and `bumps`, and those events, in version order, each beat the one
///   before;
/// - latest: the score is the value of the highest version recorded.
///
/// The versions recorded (improving ones on a best board) are distinct and between `base + 1`
/// and the member's version: exactly `base + 1..=base + n` when no ban or unban changed the
/// entry (the versions a ban or unban took are not recorded per member, so with bumps the
/// check is that the commands' versions leave exactly `bumps` of that range to them).
fn expected(
    kind: BoardKind,
    mut commands: Vec<Applied>,
    base: i64,
    bumps: i64,
) -> Result<Option<Tally>, String> {
    commands.sort_by_key(|c| c.1);
    let in_order = |commands: &[Applied]| -> Result<(), String> {
        let versions: Vec<i64> = commands.iter().map(|c| c.1).collect();
        let top = base + versions.len() as i64 + bumps;
        if versions.windows(2).any(|w| w[0] == w[1])
            || versions.iter().any(|v| *v <= base || *v > top)
        {
            return Err(format!(
                "recorded versions {versions:?}, not distinct within {}..={top} ({bumps} for \
                 bans and unbans)",
                base + 1
            ));
        }
        Ok(())
    };
    let moved = |t: Tally| Tally {
        score: t.score,
        version: base + t.version + bumps,
    };
    match kind {
        BoardKind::Add => {
            in_order(&commands)?;
            Ok(kind.expected(commands.iter().map(|c| c.0)).map(moved))
        }
        BoardKind::Latest => {
            in_order(&commands)?;
            Ok(kind.expected(commands.iter().map(|c| c.0)).map(moved))
        }
        BoardKind::Best(_) => {
            let Some(best) = kind.expected(commands.iter().map(|c| c.0)) else {
                return Ok(None);
            };
            let improving: Vec<Applied> = commands.iter().copied().filter(|c| c.2).collect();
            in_order(&improving)?;
            // Folding only the improving events counts each one exactly when it beats the one
            // before: a version short of their number is one that did not improve.
            let chain = kind.expected(improving.iter().map(|c| c.0));
            if chain.map(|t| t.version) != Some(improving.len() as i64)
                || chain.map(|t| t.score) != Some(best.score)
            {
                return Err(format!(
                    "the events recorded as improving, {:?}, do not each improve to the best {}",
                    improving.iter().map(|c| c.0).collect::<Vec<_>>(),
                    best.score
                ));
            }
            Ok(Some(moved(Tally {
                score: best.score,
                version: improving.len() as i64,
            })))
        }
    }
}

/// The ties PostgreSQL holds, as the board's tie break wants them: 0 on an undeclared board
/// (ties by user id), and on an earliest board nonzero, of the sign of the board's direction
/// (`Order::tie_sign`: ascending +1, descending -1) and unique.
fn tie_problems(board: &str, spec: &Spec, source: &Placed) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen: HashMap<i64, &str> = HashMap::new();
    for (user, (_, _, tie)) in source {
        let right = match (spec.declaration, spec.sort) {
            (None, _) => *tie == 0,
            (Some(_), Sort::Ascending) => *tie > 0,
            (Some(_), Sort::Descending) => *tie < 0,
        };
        if !right {
            problems.push(format!(
                "{board}/{user}: PostgreSQL holds tie {tie}, against the board's tie break"
            ));
        }
        if *tie != 0
            && let Some(other) = seen.insert(*tie, user)
        {
            problems.push(format!("{board}: {user} and {other} share tie {tie}"));
        }
    }
    problems
}

/// Adds one problem per member where `got` differs from `want`.
fn diff<V: PartialEq + std::fmt::Debug>(
    problems: &mut Vec<String>,
    board: &str,
    side: &str,
    want: &BTreeMap<String, V>,
    got: &BTreeMap<String, V>,
) {
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

/// A run with mismatches keeps every daemon's log beside its report, and prints the last lines
/// of each to stderr, which the contract test shows when it fails: a CI failure that cannot be
/// repeated at will must still say what the daemons did.
fn keep_logs(out: &std::path::Path, daemons: &[(String, &Daemon)]) {
    const TAIL: usize = 25;
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("could not create {}: {e}", out.display());
    }
    for (name, daemon) in daemons {
        let log = match daemon.stderr() {
            Ok(log) => log,
            Err(e) => {
                eprintln!("{name}: log unreadable: {e}");
                continue;
            }
        };
        let path = out.join(format!("{name}.log"));
        if let Err(e) = std::fs::write(&path, &log) {
            eprintln!("could not write {}: {e}", path.display());
        }
        let lines: Vec<&str> = log.lines().collect();
        eprintln!(
            "--- {name}: last {TAIL} of {} log lines ({})",
            lines.len(),
            path.display()
        );
        for line in &lines[lines.len().saturating_sub(TAIL)..] {
            eprintln!("{}", line.chars().take(300).collect::<String>());
        }
    }
}
