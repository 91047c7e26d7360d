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
//! Columns and linked boards (issue 37): `chaos-e` ranks by three columns of three orders, and
//! `chaos-f` feeds `chaos-g` and `chaos-h` (each also posted to directly), so every fault above
//! meets them too (`specs`). Every check that compares a member compares its whole tuple: the
//! score, the other columns and the column count, in PostgreSQL against the board's rule, and
//! in Redis against PostgreSQL before any repair; reads are compared in the whole tuple's order
//! with each entry's `scores`. A linked command is all or nothing: accepted, it has an event
//! on every fed board (`recorded`), which counts under that board's own rule; refused (a value
//! past `chaos-h`'s bounds) or never accepted, it has none on any.
//!
//! Competitions (issue 39): `chaos-cup` is a league with cohorts of 3 over a board that resets
//! every 3 s; one client enters players and posts their scores through the faults, and the
//! league's runs close while they go on (a run's close waits for its rows, and the next run's
//! entries for the close). `cup.rs` checks it apart: capacities, each entry in the cohort its
//! answer named, each score's event on its cohort, the cohorts' entries against the accepted
//! commands, every cohort's projection against PostgreSQL before any pass, and after the pass
//! every ended run closed and `competition::verify` holding run after run.
//!
//! It runs on a database of its own and a redis-server of its own (on a free port), so it can
//! flush and crash Redis without touching anyone's data.

mod api;
mod check;
mod client;
mod compare;
mod cup;
mod drain;
mod event_log;
mod expected;
mod faults;
mod ledger;
mod metrics;
mod moderation;
mod moderator;
mod players;
mod ranking;
mod recorded;
mod report;
mod rng;
mod seasons;
mod specs;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::BoardId;
use ledgerboard_harness::{Daemon, RedisServer};

use crate::stack::{PROJECTOR, RECONCILER, Stack};
use compare::{AfterModeration, BeforeRepair, before_repair};
use drain::{Drained, wait_drained};
pub use faults::Fault;
use faults::Probes;
use ledger::{Ledger, lock};
use metrics::FinalPass;
use rng::Rng;
use seasons::{DbClock, SeasonChecks};
use specs::{SPECS, run_boards};

/// The reconciler's interval during the run: longer than any run, so its only pass is the one
/// at start-up, on the empty database, and it serves rebuild requests in between.
const NO_PASS_INTERVAL_MS: &str = "604800000";

pub struct Options {
    pub duration: Duration,
    pub clients: usize,
    pub projectors: usize,
    pub seed: u64,
    pub out: PathBuf,
    /// The fault kinds to inject (an empty list: every kind).
    pub faults: Vec<Fault>,
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

/// What the phases of a run share: its stack and processes, the clients' ledger, the generator
/// of the fault loop and of the steps after it, and what the probes and the period checks have
/// found so far.
struct Run<'a> {
    stack: &'a Stack,
    redis: &'a mut RedisServer,
    options: &'a Options,
    started: Instant,
    api: Daemon,
    projectors: Vec<Daemon>,
    reconciler: Daemon,
    /// Where the reconciler's metrics count its passes and rebuilds.
    reconciler_admin: String,
    passes_at_start: f64,
    clock: DbClock,
    ledger: Arc<Mutex<Ledger>>,
    load_started: Instant,
    rng: Rng,
    probes: Probes,
    seasons: SeasonChecks,
    /// The league with cohorts: its client's ledger and its checks (`cup.rs`).
    cup: Arc<Mutex<cup::CupLedger>>,
    cup_checks: cup::CupChecks,
}

/// The run, phase by phase; the module's comment says what each one holds the product to.
async fn chaos(
    stack: &Stack,
    redis: &mut RedisServer,
    options: &Options,
) -> anyhow::Result<Report> {
    let mut run = Run::start(stack, redis, options).await?;
    let injected = run.load().await?;
    let drained = run.drain().await?;
    // The event log before anything repairs anything: each accepted command's one event.
    let accepted: Vec<uuid::Uuid> = lock(&run.ledger).accepted.keys().copied().collect();
    let event_log = event_log::check(stack, &accepted).await?;
    // The boards compared from here on: the boards that do not reset and every period with an
    // entry or an event (no new one appears: a ban or unban writes only entries that exist).
    let boards = run_boards(stack).await?;
    let lost = run.lose_a_board(&boards).await?;
    let before = before_repair(stack, &boards, &run.probes.corrupted).await?;
    cup::before_repair(stack, &mut run.cup_checks).await?;
    let (after_applied, after) = run.moderate_after_the_faults(&boards).await?;
    let pass = run.final_pass(&boards).await?;
    let (ledger, checked, mismatches) = run
        .verdict(&injected, &before, &after, &pass, &drained, &event_log)
        .await?;
    let markdown = report::markdown(&report::Figures {
        seed: options.seed,
        duration: options.duration,
        clients: options.clients,
        projectors: options.projectors,
        started: run.started,
        ledger: &ledger,
        probes: &run.probes,
        seasons: &run.seasons,
        cup: &run.cup_checks,
        injected: &injected,
        drained: &drained,
        event_log: &event_log,
        lost: &lost,
        before: &before,
        after_applied,
        after: &after,
        pass: &pass,
        checked: &checked,
        mismatches: &mismatches,
    });
    Ok(Report {
        markdown,
        mismatches: mismatches.len(),
    })
}

impl<'a> Run<'a> {
    /// The api and the boards declared, the database clock measured, the projectors and the
    /// reconciler started, and the reconciler's start-up pass done.
    async fn start(
        stack: &'a Stack,
        redis: &'a mut RedisServer,
        options: &'a Options,
    ) -> anyhow::Result<Run<'a>> {
        let started = Instant::now();
        let api = stack.start_api()?;
        api::declare(stack).await?;
        cup::declare(stack).await?;
        let clock = DbClock::measure(stack).await?;
        let projectors = (0..options.projectors.max(1))
            .map(|_| stack.start(PROJECTOR, &[]))
            .collect::<anyhow::Result<Vec<Daemon>>>()?;
        let mut reconciler = stack.start(RECONCILER, &[])?;
        // Its admin server bound a port of its own choice (`127.0.0.1:0`) and logged it.
        let reconciler_admin = reconciler
            .wait_for_addr("admin server (healthz", Duration::from_secs(30))?
            .to_string();
        // The daemon's first pass runs at start-up, on the empty database; wait for it, so that
        // every pass counted from here on would be one during the load.
        let passes_at_start = metrics::startup_pass(&reconciler_admin).await?;
        Ok(Run {
            stack,
            redis,
            options,
            started,
            api,
            projectors,
            reconciler,
            reconciler_admin,
            passes_at_start,
            clock,
            ledger: Arc::new(Mutex::new(Ledger::default())),
            load_started: Instant::now(),
            rng: Rng(options.seed),
            probes: Probes::default(),
            seasons: SeasonChecks::default(),
            cup: Arc::default(),
            cup_checks: cup::CupChecks::default(),
        })
    }

    /// The load: the clients and the moderation loop until the deadline, the faults until
    /// then (and after it until every kind was injected once); returns the faults injected.
    async fn load(&mut self) -> anyhow::Result<BTreeMap<Fault, u64>> {
        let (stack, options) = (self.stack, self.options);
        let deadline = self.load_started + options.duration;
        let api_addr = stack.api_addr()?;
        let clients: Vec<_> = (0..options.clients.max(1))
            .map(|i| {
                tokio::spawn(client::client(
                    api_addr,
                    stack.bearer.clone(),
                    self.ledger.clone(),
                    Rng(options.seed ^ (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)),
                    deadline,
                ))
            })
            .collect();
        // One player client: player tokens and attempts, and attacks on both (`players.rs`).
        let players = tokio::spawn(players::players(
            api_addr,
            stack.player_secret.clone(),
            self.ledger.clone(),
            Rng(options.seed ^ 0x706c_6179_6572_7321),
            deadline,
        ));
        // One league client: entries into cohorts, and their players' scores (`cup.rs`).
        let cup = tokio::spawn(cup::client(
            api_addr,
            stack.bearer.clone(),
            self.cup.clone(),
            Rng(options.seed ^ 0x6c65_6167_7565_2121),
            deadline,
        ));
        // One moderation loop (one action at a time: its order is the database's, see
        // `moderation`), with choices of its own from the seed.
        let moderator = tokio::spawn(moderator::moderator(
            api_addr,
            stack.bearer.clone(),
            self.ledger.clone(),
            Rng(options.seed ^ 0x6d6f_6465_7261_7465),
            self.load_started,
            deadline,
        ));
        let injected = faults::inject_until(
            &faults::chosen(&options.faults),
            deadline,
            stack,
            self.redis,
            &mut self.projectors,
            &mut self.rng,
            &mut self.probes,
        )
        .await?;
        for c in clients {
            c.await.context("a client task failed")?;
        }
        moderator.await.context("the moderation loop failed")?;
        players.await.context("the players' client failed")?;
        cup.await.context("the league's client failed")?;
        Ok(injected)
    }

    /// The faults have stopped: every process up, the outbox drained. No pass has run. Then
    /// the `period=current` and `period=previous` reads.
    async fn drain(&mut self) -> anyhow::Result<Drained> {
        let stack = self.stack;
        if !self.redis.ping() {
            tokio::task::block_in_place(|| self.redis.restart())?;
        }
        for p in self.projectors.iter_mut() {
            if !p.is_running() {
                *p = stack.start(PROJECTOR, &[])?;
            }
        }
        let drained = wait_drained(stack, &self.probes.corrupted, Duration::from_secs(120)).await?;
        // No command comes after the drain: the periods' contents are final but for the
        // moderation below. Read now, `period=previous` most likely names the last period with
        // entries (or the one before it, when the last is still open).
        seasons::period_reads(stack, &mut self.seasons).await?;
        Ok(drained)
    }

    /// A board lost after the last command: nothing writes to it again, so only a read can
    /// find it. This makes every run's comparison meet a board that is not whole (one with a
    /// visible entry: one without is never whole, see `before_repair`). Returns the board.
    async fn lose_a_board(&mut self, boards: &[BoardId]) -> anyhow::Result<BoardId> {
        let stack = self.stack;
        let mut with_entries = Vec::new();
        for id in boards {
            if !stack.placed_source(id).await?.is_empty() {
                with_entries.push(id);
            }
        }
        let lost = with_entries
            .get(self.rng.below(with_entries.len() as u64) as usize)
            .copied()
            .cloned()
            .context("no board has a visible entry after the load")?;
        let keys = stack.store.keys();
        let mut conn = stack.store.connection().await?;
        let _: i64 = redis::cmd("UNLINK")
            .arg(keys.scores(&lost))
            .arg(keys.versions(&lost))
            .arg(keys.meta(&lost))
            .query_async(&mut conn)
            .await?;
        Ok(lost)
    }

    /// Every board is whole now. A last ban, removal and unban, drained, and every board
    /// compared again: no rebuild follows them, so the projector's handling of each is what is
    /// compared (see `moderator::after_the_faults`). The removal's candidates are the boards
    /// that do not reset: a removal names a board, and the api removes nothing from a period
    /// (api.md, Moderation); a ban reaches every period of its user. Returns the actions
    /// applied and the comparison.
    async fn moderate_after_the_faults(
        &mut self,
        boards: &[BoardId],
    ) -> anyhow::Result<(usize, AfterModeration)> {
        let stack = self.stack;
        let mut visible: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        for spec in SPECS.iter().filter(|s| s.period_secs.is_none()) {
            let users = stack.placed_source(&BoardId::parse(spec.name)?).await?;
            visible.insert(spec.name, users.into_keys().collect());
        }
        let applied = moderator::after_the_faults(
            stack.api_addr()?,
            &stack.bearer,
            &self.ledger,
            &mut self.rng,
            self.load_started,
            &visible,
            &self.probes.corrupted,
        )
        .await;
        wait_drained(stack, &self.probes.corrupted, Duration::from_secs(60)).await?;
        let after = compare::after_moderation(stack, boards, &self.probes.corrupted).await?;
        Ok((applied, after))
    }

    /// The reconciler's counts, then its one pass, once every period with entries has ended;
    /// then the pass's closes checked, and the projectors stopped.
    async fn final_pass(&mut self, boards: &[BoardId]) -> anyhow::Result<FinalPass> {
        let stack = self.stack;
        let admin = &self.reconciler_admin;
        let passes_before = metrics::reconciler_passes(admin).await? - self.passes_at_start;
        let rebuilds = metrics::reconciler_rebuilds(admin).await.unwrap_or(-1.0);
        tokio::task::block_in_place(|| self.reconciler.terminate(Duration::from_secs(15)));
        // The pass closes the periods that have ended by then: so that it must close every
        // period with entries, it starts only once the last of them has ended (usually long
        // since).
        seasons::wait_periods_ended(stack, boards, &mut self.seasons).await?;
        let pass = stack.reconcile_once(&[]).await?;
        // The projectors still run: a period whose close waits for rows held at a corrupted
        // member is closed once the repaired member's rows are projected (`check_closes`).
        seasons::check_closes(stack, boards, &self.probes.corrupted, &mut self.seasons).await?;
        let cup = std::mem::take(&mut *lock(&self.cup));
        cup::after_pass(stack, &cup, &mut self.cup_checks).await?;
        for p in self.projectors.iter_mut() {
            tokio::task::block_in_place(|| p.terminate(Duration::from_secs(15)));
        }
        Ok(FinalPass {
            passes_before,
            rebuilds,
            totals: pass["totals"].clone(),
        })
    }

    /// Every mismatch, in the report's order: the answers, the probes, the comparisons, the
    /// pass, the final check, the periods and the drain. Writes the moderation ledger beside
    /// the report, and keeps the daemons' logs when there is a mismatch. Returns the ledger
    /// and what the final check covered, with the mismatches.
    async fn verdict(
        &mut self,
        injected: &BTreeMap<Fault, u64>,
        before: &BeforeRepair,
        after: &AfterModeration,
        pass: &FinalPass,
        drained: &Drained,
        event_log: &event_log::EventLog,
    ) -> anyhow::Result<(Ledger, check::Checked, Vec<String>)> {
        let ledger = std::mem::take(
            &mut *self
                .ledger
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?,
        );
        let mut mismatches: Vec<String> = ledger.violations.clone();
        mismatches.extend(self.probes.problems.iter().cloned());
        mismatches.extend(event_log.problems.iter().cloned());
        mismatches.extend(before.problems.iter().cloned());
        mismatches.extend(after.problems.iter().cloned());
        let passes_before = pass.passes_before;
        if passes_before != 0.0 {
            mismatches.push(format!(
                "{passes_before} reconciler pass(es) ran during the load or before the comparison"
            ));
        }
        let corruptions = faults::corruptions(injected);
        let (ahead, repairs) = (pass.ahead(), pass.repairs());
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
        let checked = check::check(self.stack, &ledger, &self.clock, &mut self.seasons).await?;
        mismatches.extend(checked.problems.iter().cloned());
        mismatches.extend(self.seasons.problems.iter().cloned());
        mismatches.extend(self.cup_checks.problems.iter().cloned());
        // The moderation ledger, each action with what the api answered and when, beside the
        // report.
        let actions: Vec<serde_json::Value> = ledger
            .moderation
            .applied
            .iter()
            .map(|m| m.to_json())
            .collect();
        let out = &self.options.out;
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        std::fs::write(
            out.join("moderation.json"),
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
                ("api".to_owned(), &self.api),
                ("reconciler".to_owned(), &self.reconciler),
            ];
            daemons.extend(
                self.projectors
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (format!("projector-{i}"), p)),
            );
            report::keep_logs(out, &daemons);
        }
        Ok((ledger, checked, mismatches))
    }
}

/// The seed of a run that was not given one.
pub fn default_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id())
}
