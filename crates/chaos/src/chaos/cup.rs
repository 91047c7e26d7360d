//! A league with cohorts (issue 39): `chaos-cup`, a best board that resets every 3 s, and a
//! competition over it with cohorts of 3 and two tiers, so that a 12 s run has several runs,
//! each closed (by the next run's first entry, or the final pass) while the faults go on. One
//! client enters players and posts their scores through the api as a game does: an entry
//! (idempotent, sent again until an answer says what happened), then a score with its event id
//! (the same on every retry). The league's boards (one per cohort of each run) are checked
//! here, apart from the other boards' (`run_boards` and the events check leave them out):
//!
//! - after the drain, before any pass: every cohort's projection, once whole (a bounded read
//!   asks for the rebuild of one that is not), equals PostgreSQL;
//! - capacities: no cohort past its size, each cohort's count equal to its entries, and each
//!   entry in the cohort its answer named (one cohort per player and run: the primary key);
//! - every accepted score's event is on the cohort board its answer named, every event of the
//!   league is a command's that was accepted (or whose answer never came), none is a refused
//!   one's; each cohort's entries are the best of its players' commands;
//! - after the final pass, which closes the ended runs: every ended run with entries is closed,
//!   and `competition::verify` holds, run after run (digests, the chain, moves, and each
//!   cohort's standings against the events).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ledgerboard_core::competition;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::Seal;
use ledgerboard_harness::http;
use uuid::Uuid;

use super::api::{REQUEST_LIMIT, SETTLE_LIMIT, bounded_read};
use super::ledger::lock;
use super::rng::Rng;
use crate::stack::Stack;

/// The league's board.
pub(super) const CUP: &str = "chaos-cup";
const DEFINITION: &str = r#"{"operator":"best","reset":"every 3s","min_score":0,"max_score":1000}"#;
const COMPETITION: &str = r#"{"cohort_size":3,"tiers":[{"name":"bronze","promote":1},{"name":"silver","relegate":1}],"prizes":[{"from":1,"to":1,"reward":"cup","amount":1}]}"#;
const COHORT_SIZE: i64 = 3;
/// Its players (none of the other clients' users: the moderation loop never touches them).
const PLAYERS: u64 = 12;

/// Whether a stored board id is one of the league's (its periods' cohorts).
pub(super) fn is_cup(board: &str) -> bool {
    board
        .strip_prefix(CUP)
        .is_some_and(|rest| rest.starts_with('~'))
}

/// What the league's client learned.
#[derive(Default)]
pub(super) struct CupLedger {
    /// (run, user) → the cohort the entry's answer named.
    pub(super) entries: BTreeMap<(String, String), i64>,
    /// Accepted scores: event → (user, score, the cohort board the answer named).
    pub(super) accepted: HashMap<Uuid, (String, i64, String)>,
    /// Scores whose answer never came: event → (user, score).
    pub(super) unresolved: HashMap<Uuid, (String, i64)>,
    /// Scores refused (the run changed between the entry and the score): no event may exist.
    pub(super) refused: BTreeSet<Uuid>,
    /// Entries refused while the previous run was closing.
    pub(super) closing: u64,
    pub(super) violations: Vec<String>,
}

/// What the checks found, for the report.
#[derive(Default)]
pub(super) struct CupChecks {
    pub(super) entries: usize,
    pub(super) accepted: usize,
    pub(super) cohorts: usize,
    /// Cohort boards whole and equal to PostgreSQL after the drain (before any pass), and those
    /// that had to be rebuilt first.
    pub(super) whole_equal: usize,
    pub(super) rebuilt: usize,
    pub(super) runs_closed: usize,
    pub(super) verified: String,
    pub(super) problems: Vec<String>,
}

/// Declares the league's board and the competition over it.
pub(super) async fn declare(stack: &Stack) -> anyhow::Result<()> {
    for (path, body) in [
        (format!("/v1/boards/{CUP}"), DEFINITION),
        (format!("/v1/competitions/{CUP}"), COMPETITION),
    ] {
        let (status, answer) = post(stack.api_addr()?, &stack.bearer, "PUT", &path, body).await?;
        anyhow::ensure!(status == 201, "PUT {path}: {status} {answer}");
    }
    Ok(())
}

async fn post(
    api: std::net::SocketAddr,
    bearer: &str,
    method: &str,
    path: &str,
    body: &str,
) -> anyhow::Result<(u16, String)> {
    let headers = [("authorization", bearer)];
    Ok(http::request(api, method, path, &headers, body.to_owned(), REQUEST_LIMIT).await?)
}

/// Sends until an answer below 500 comes (the entry and the score are idempotent), or the
/// settle limit past the deadline: the status and body, and how many sends failed.
async fn until_answered(
    api: std::net::SocketAddr,
    bearer: &str,
    path: &str,
    body: &str,
    deadline: Instant,
) -> (Option<(u16, String)>, u64) {
    let mut retries = 0;
    loop {
        match post(api, bearer, "POST", path, body).await {
            Ok((status, answer)) if status < 500 => return (Some((status, answer)), retries),
            _ if Instant::now() > deadline + SETTLE_LIMIT => return (None, retries),
            _ => {
                retries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_default()
}

/// The league's client, until the deadline.
pub(super) async fn client(
    api: std::net::SocketAddr,
    bearer: String,
    ledger: Arc<Mutex<CupLedger>>,
    mut rng: Rng,
    deadline: Instant,
) {
    let entries = format!("/v1/competitions/{CUP}/entries");
    let scores = format!("/v1/boards/{CUP}/scores");
    while Instant::now() < deadline {
        let user = format!("cup-{:02}", rng.below(PLAYERS));
        let body = format!(r#"{{"user_id":"{user}"}}"#);
        let (answer, _) = until_answered(api, &bearer, &entries, &body, deadline).await;
        match answer {
            Some((200 | 201, body)) => {
                let v = json(&body);
                let (Some(run), Some(cohort)) = (v["run"].as_str(), v["cohort"].as_i64()) else {
                    lock(&ledger).violations.push(format!(
                        "an entry answered without its run or cohort: {body}"
                    ));
                    continue;
                };
                let mut l = lock(&ledger);
                if let Some(before) = l.entries.insert((run.to_owned(), user.clone()), cohort)
                    && before != cohort
                {
                    l.violations.push(format!(
                        "{user} entered run {run} in cohort {before}, then {cohort}"
                    ));
                }
            }
            // The previous run closes first (rows of it on their way to Redis): later.
            Some((409, body)) if json(&body)["error"]["code"] == "competition_closing" => {
                lock(&ledger).closing += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            None => continue,
            Some((status, body)) => {
                lock(&ledger)
                    .violations
                    .push(format!("an entry of {user} answered {status}: {body}"));
                continue;
            }
        }
        let event = rng.uuid();
        let score = rng.below(1000) as i64;
        let body = format!(r#"{{"event_id":"{event}","user_id":"{user}","score":{score}}}"#);
        let (answer, retries) = until_answered(api, &bearer, &scores, &body, deadline).await;
        let mut l = lock(&ledger);
        match answer {
            Some((status, body))
                if status == 201
                    || (status == 200 && retries > 0 && body.contains(r#""duplicate":true"#)) =>
            {
                let v = json(&body);
                match (v["period"].as_str(), v["cohort"].as_u64()) {
                    (Some(period), Some(cohort)) => {
                        let board = format!("{CUP}~{period}~{cohort:06}");
                        l.accepted.insert(event, (user, score, board));
                    }
                    _ => l.violations.push(format!(
                        "a score on the league answered without its period and cohort: {body}"
                    )),
                }
            }
            // Entered in a run that ended before the score's statement ran: refused whole.
            Some((403, body)) if json(&body)["error"]["code"] == "competition_not_entered" => {
                l.refused.insert(event);
            }
            None => {
                l.unresolved.insert(event, (user, score));
            }
            Some((status, body)) => l.violations.push(format!(
                "a score of {user} on the league answered {status}: {body}"
            )),
        }
    }
}

/// The league's cohort boards PostgreSQL holds entries of.
async fn cohort_boards(stack: &Stack) -> anyhow::Result<Vec<BoardId>> {
    let client = stack.db.client().await?;
    let rows = client
        .query(
            "SELECT DISTINCT board_id FROM user_scores WHERE board_id LIKE 'chaos-cup~%' ORDER BY 1",
            &[],
        )
        .await?;
    rows.iter()
        .map(|r| Ok(BoardId::parse_stored(&r.try_get::<_, String>(0)?)?))
        .collect()
}

/// After the drain, before any pass: each cohort's projection, once whole, equals PostgreSQL.
pub(super) async fn before_repair(stack: &Stack, checks: &mut CupChecks) -> anyhow::Result<()> {
    let boards = cohort_boards(stack).await?;
    checks.cohorts = boards.len();
    for board in &boards {
        let (seal, _) = stack.sealed_projection(board).await?;
        if seal != Seal::Whole {
            // A read finds it not whole and asks for its rebuild (Redis lost it in a fault).
            let (period, cohort) = board
                .period()
                .and_then(|p| p.split_once('~'))
                .unwrap_or_default();
            let base = board.base().in_period(period)?;
            let _ = bounded_read(
                stack,
                &base,
                &format!("cohort={}", cohort.trim_start_matches('0')),
            )
            .await?;
            let deadline = Instant::now() + super::compare::REBUILD_LIMIT;
            while stack.sealed_projection(board).await?.0 != Seal::Whole {
                if Instant::now() > deadline {
                    checks
                        .problems
                        .push(format!("{board}: not whole 30 s after a read asked for it"));
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            checks.rebuilt += 1;
        }
        let (seal, projection) = stack.sealed_projection(board).await?;
        let source = stack.placed_source(board).await?;
        if seal == Seal::Whole && projection == source {
            checks.whole_equal += 1;
        } else if seal == Seal::Whole {
            checks.problems.push(format!(
                "{board}: whole, and its projection ({} members) differs from PostgreSQL ({})",
                projection.len(),
                source.len()
            ));
        }
    }
    Ok(())
}

/// The league held to its client's ledger in PostgreSQL, after the final pass: capacities,
/// events, standings, closes and the verification of every closed run.
pub(super) async fn after_pass(
    stack: &Stack,
    ledger: &CupLedger,
    checks: &mut CupChecks,
) -> anyhow::Result<()> {
    let problems = &mut checks.problems;
    problems.extend(ledger.violations.iter().cloned());
    checks.entries = ledger.entries.len();
    checks.accepted = ledger.accepted.len();
    let client = stack.db.client().await?;
    let over: i64 = client
        .query_one(
            "SELECT count(*) FROM competition_cohorts k
             WHERE k.competition_id = 'chaos-cup'
               AND (k.members > $1 OR k.members <> (
                   SELECT count(*) FROM competition_entries e
                   WHERE e.competition_id = k.competition_id AND e.run = k.run
                     AND e.cohort = k.cohort))",
            &[&(COHORT_SIZE as i32)],
        )
        .await?
        .try_get(0)?;
    if over != 0 {
        problems.push(format!(
            "{over} cohort(s) past their size or counting other than their entries"
        ));
    }
    for r in client
        .query(
            "SELECT run, user_id, cohort FROM competition_entries WHERE competition_id = 'chaos-cup'",
            &[],
        )
        .await?
    {
        let key = (r.try_get::<_, String>(0)?, r.try_get::<_, String>(1)?);
        let cohort: Option<i32> = r.try_get(2)?;
        if let Some(answered) = ledger.entries.get(&key)
            && cohort.map(i64::from) != Some(*answered)
        {
            problems.push(format!(
                "{} entered run {} in cohort {answered}, PostgreSQL says {cohort:?}",
                key.1, key.0
            ));
        }
    }
    // Events: each accepted score's on the board its answer named; none of a refused one.
    let mut applied: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for r in client
        .query(
            // The value each command submitted (`score` is the standing best it left).
            "SELECT event_id, board_id, user_id, coalesce(submitted, score) FROM score_events
             WHERE board_id LIKE 'chaos-cup~%'",
            &[],
        )
        .await?
    {
        let (event, board): (Uuid, String) = (r.try_get(0)?, r.try_get(1)?);
        let (user, score): (String, i64) = (r.try_get(2)?, r.try_get(3)?);
        let known = match (ledger.accepted.get(&event), ledger.unresolved.get(&event)) {
            (Some((u, s, b)), _) => {
                if (u, s, b) != (&user, &score, &board) {
                    problems.push(format!(
                        "event {event}: {user} {score} on {board}, answered {u} {s} on {b}"
                    ));
                }
                true
            }
            (None, Some((u, s))) => u == &user && *s == score,
            (None, None) => false,
        };
        if !known || ledger.refused.contains(&event) {
            problems.push(format!("event {event} on {board} is no accepted command's"));
        }
        let best = applied
            .entry(board)
            .or_default()
            .entry(user)
            .or_insert(score);
        *best = (*best).max(score);
    }
    for event in &ledger.refused {
        if ledger.accepted.contains_key(event) {
            problems.push(format!("score {event} was both accepted and refused"));
        }
    }
    for (event, (_, _, board)) in &ledger.accepted {
        if !applied.contains_key(board) {
            problems.push(format!("accepted score {event}: no event on {board}"));
        }
    }
    // Standings: every cohort's entries are its players' best.
    let mut held: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for r in client
        .query(
            "SELECT board_id, user_id, score FROM user_scores WHERE board_id LIKE 'chaos-cup~%'",
            &[],
        )
        .await?
    {
        held.entry(r.try_get(0)?)
            .or_default()
            .insert(r.try_get(1)?, r.try_get(2)?);
    }
    if held != applied {
        problems.push(format!(
            "the league's cohorts in PostgreSQL differ from the best of their accepted commands \
             ({} boards held, {} expected)",
            held.len(),
            applied.len()
        ));
    }
    // The final pass closed every ended run (a run whose rows were held is closed here).
    let db = &stack.db;
    let board = BoardId::parse(CUP)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let closed = competition::close_ended(db, &board).await?;
        if closed || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let open: i64 = client
        .query_one(
            "SELECT count(*) FROM competition_runs r JOIN board_definitions d
                 ON d.board_id = r.competition_id
             WHERE r.competition_id = 'chaos-cup' AND r.closed_at IS NULL
               AND r.run < lb_period_id(lb_period_start(d.board_id, d.reset, d.time_zone, now()))",
            &[],
        )
        .await?
        .try_get(0)?;
    if open != 0 {
        problems.push(format!("{open} ended run(s) of the league not closed"));
    }
    let verified = competition::verify(db, &board).await?;
    checks.runs_closed = verified.runs.len();
    checks.verified = verified.outcome.words().to_owned();
    if !verified.outcome.holds() || verified.runs.is_empty() {
        problems.push(format!(
            "the league's {} closed run(s) {}: {:?}",
            verified.runs.len(),
            verified.outcome.words(),
            verified
                .runs
                .iter()
                .flat_map(|r| r.problems.iter())
                .take(3)
                .collect::<Vec<_>>()
        ));
    }
    Ok(())
}
