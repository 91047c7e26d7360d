//! The checks of the periods of the board that resets (`chaos-d`) beside the ones every board
//! gets: the database clock against the local one, the `period=current` and `period=previous`
//! reads after the drain, the wait for every period with entries to end before the pass, the
//! pass's closes, and each accepted command held to the period its answer named.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::board::periods;
use ledgerboard_core::model::{BoardId, Key};

use super::api::{bounded_read, get};
use super::drain::wait_drained;
use super::expected::diff;
use super::ledger::{Ledger, epoch_secs};
use super::ranking::{page_scores, ranking};
use super::specs::{SPECS, Spec, spec, spec_of};
use crate::stack::{Placed, Stack};

const PERIOD_CLOSES: &str = include_str!("../sql/period_closes.sql");
const PERIOD_STARTS: &str = include_str!("../sql/period_starts.sql");
const DB_CLOCK: &str = include_str!("../sql/db_clock.sql");

/// What the run checked of the periods of the board that resets (`chaos-d`), beside the checks
/// every board gets (each period is compared as a board of its own).
#[derive(Default)]
pub(super) struct SeasonChecks {
    /// Per period with an accepted command, how many accepted commands' answers named it.
    pub(super) commands: BTreeMap<String, usize>,
    /// Accepted commands whose time in flight spanned a boundary (by the database clock): each
    /// landed in the period its answer named, open at some instant of that time.
    pub(super) across_boundary: usize,
    /// The `period=current` and `period=previous` reads after the drain: which, the period the
    /// answer named, and its entries (equal to that period's in PostgreSQL).
    pub(super) named_reads: Vec<(&'static str, String, usize)>,
    /// Periods whose `period=<id>` read in the final check equals their ranking.
    pub(super) id_reads_equal: usize,
    /// Periods the one pass closed, and those closed after it (rows held at a member chaos
    /// corrupted kept the pass's close waiting: `check_closes`).
    pub(super) closed_by_pass: usize,
    pub(super) closed_after: usize,
    /// Closes for which `periods::verify` holds, and whose frozen standings (read through the
    /// api) equal the period's visible entries in PostgreSQL, in order.
    pub(super) verified: usize,
    pub(super) standings_equal: usize,
    pub(super) problems: Vec<String>,
}

/// The database clock against the local one. Periods follow the database clock; the clients
/// time their commands by the local one, so the check shifts those times by the offset, give or
/// take the slack, before it holds a command to its period.
pub(super) struct DbClock {
    /// Database minus local, in seconds.
    pub(super) offset: f64,
    /// How far the offset may be off: half the round trip of its best measure, and a margin.
    pub(super) slack: f64,
}

impl DbClock {
    /// The best of five readings (the one with the shortest round trip).
    pub(super) async fn measure(stack: &Stack) -> anyhow::Result<DbClock> {
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
pub(super) async fn period_reads(stack: &Stack, seasons: &mut SeasonChecks) -> anyhow::Result<()> {
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
            let want = ranking(spec.order(), &stack.placed_source(&id).await?);
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
pub(super) async fn wait_periods_ended(
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
pub(super) async fn check_closes(
    stack: &Stack,
    boards: &[BoardId],
    corrupted: &BTreeSet<(String, String)>,
    seasons: &mut SeasonChecks,
) -> anyhow::Result<()> {
    let client = stack.db.client().await?;
    let mut closed: BTreeSet<(String, String)> = BTreeSet::new();
    for r in client.query(PERIOD_CLOSES, &[]).await? {
        let board: String = r.try_get(0)?;
        // The league's cohorts close with their runs, checked apart (`cup.rs`).
        if board == super::cup::CUP {
            continue;
        }
        closed.insert((board, r.try_get(1)?));
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
            .map(|s| s.iter().map(|e| standing(spec, e)).collect())
            .unwrap_or_default();
        let mut differences = Vec::new();
        diff(
            &mut differences,
            id.as_str(),
            "the frozen standings",
            &source,
            &frozen,
        );
        let in_order = page_scores(&answer["standings"]) == ranking(spec.order(), &source);
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

/// One line of a closed period's standings as the member it states: its score, version and
/// key (the board's columns, the values of its `scores` past the first in order-key form, its
/// tie); what is not there reads as `i64::MIN`, so that it never equals the source.
fn standing(spec: &Spec, e: &serde_json::Value) -> (String, (i64, i64, Key)) {
    let n = |k: &str| e[k].as_i64().unwrap_or(i64::MIN);
    let columns = spec.columns();
    let scores: Vec<i64> = e["scores"]
        .as_array()
        .map(|s| s.iter().map(|v| v.as_i64().unwrap_or(i64::MIN)).collect())
        .unwrap_or_default();
    let mut rest = [0; 2];
    for (i, slot) in rest.iter_mut().enumerate().take(columns.count() - 1) {
        *slot = scores
            .get(i + 1)
            .map_or(i64::MIN, |v| columns.key(i + 1, *v));
    }
    let key = Key {
        columns: columns.count() as u8,
        rest,
        tie: n("tie"),
    };
    (
        e["user_id"].as_str().unwrap_or_default().to_owned(),
        (n("score"), n("version"), key),
    )
}

/// The accepted commands on a board that resets, held to their time in flight: the period an
/// answer named must have been open (by the database clock) at some instant between the send
/// of the command's first attempt and its answer, since the statement read the clock in
/// between. Counts the commands per period, and those in flight across a boundary.
pub(super) async fn in_flight_periods(
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
