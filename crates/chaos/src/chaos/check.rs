//! The final check: every accepted command against `score_events`, every member against what
//! its board's rule makes of them, the moderation against what PostgreSQL keeps, and Redis and
//! a top read against PostgreSQL's visible entries.

use std::collections::{BTreeMap, BTreeSet};

use super::api::bounded_read;
use super::expected::{Applied, Members, diff, expected, tie_problems};
use super::ledger::Ledger;
use super::moderation;
use super::ranking::{page_scores, ranking};
use super::recorded::{applied_commands, recorded_events};
use super::seasons::{DbClock, SeasonChecks, in_flight_periods};
use super::specs::{run_boards, spec_of};
use crate::stack::Stack;

const MEMBERS: &str = include_str!("../sql/members.sql");
const REMOVED_ENTRIES: &str = include_str!("../sql/removed_entries.sql");
const BANNED_USERS: &str = include_str!("../sql/banned_users.sql");

/// What the final check covered, for the report: per board as stored, the members whose
/// entries it expected from the commands and the commands they were made of; the events fed by
/// a linked command; and the refused commands it found no event of on any board.
#[derive(Default)]
pub(super) struct Checked {
    pub(super) boards: BTreeMap<String, (usize, usize)>,
    pub(super) fed_events: usize,
    pub(super) refused: usize,
    pub(super) problems: Vec<String>,
}

/// The contract, checked against PostgreSQL and Redis; every board as stored is held to its
/// own rule, a fed board's to the commands sent to it and those its feeder's accepted
/// commands fed it.
pub(super) async fn check(
    stack: &Stack,
    ledger: &Ledger,
    clock: &DbClock,
    seasons: &mut SeasonChecks,
) -> anyhow::Result<Checked> {
    let mut checked = Checked::default();
    let problems = &mut checked.problems;
    let client = stack.db.client().await?;
    let events = recorded_events(&client, problems).await?;
    let mut applied = applied_commands(ledger, &events, problems);
    checked.fed_events = events.values().filter(|e| e.source.is_some()).count();
    checked.refused = ledger.refused.len();
    problems.extend(in_flight_periods(stack, ledger, clock, seasons).await?);
    // Moderation: what the applied actions, in the loop's order (the database's commit order,
    // see `moderation`), make of each member, checked against what PostgreSQL keeps.
    let moderated = moderation::expectation(&ledger.moderation.applied, problems);
    let mut removed_entries: BTreeMap<(String, String), i64> = BTreeMap::new();
    for r in client.query(REMOVED_ENTRIES, &[]).await? {
        removed_entries.insert((r.try_get(0)?, r.try_get(1)?), r.try_get(2)?);
    }
    let mut banned_users = BTreeSet::new();
    for r in client.query(BANNED_USERS, &[]).await? {
        banned_users.insert(r.try_get::<_, String>(0)?);
    }
    moderation::compare_state(&moderated, &removed_entries, &banned_users, problems);
    // Every board as stored, each period of the board that resets as a board of its own.
    for id in run_boards(stack).await? {
        let board = id.as_str();
        let Some(spec) = spec_of(&id) else {
            problems.push(format!("{board}: PostgreSQL holds a board not of the run"));
            continue;
        };
        let mut want: Members = BTreeMap::new();
        let commands_of_board = applied.remove(&id).unwrap_or_default();
        checked.boards.insert(
            board.to_owned(),
            (
                commands_of_board.len(),
                commands_of_board.values().map(Vec::len).sum(),
            ),
        );
        for (user, commands) in commands_of_board {
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
            match expected((spec.operator, spec.order()), after, base, bumps) {
                Ok(Some(t)) => {
                    want.insert(user.to_owned(), (t.score, t.rest, t.version));
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
            scores.insert(
                user,
                (r.try_get(1)?, [r.try_get(4)?, r.try_get(5)?], r.try_get(2)?),
            );
        }
        diff(problems, board, "PostgreSQL", &want, &scores);
        // The visible entries: what Redis and every read must hold, and nothing else.
        let source = stack.placed_source(&id).await?;
        problems.extend(tie_problems(board, spec, &source));
        let (_, projection) = stack.sealed_projection(&id).await?;
        diff(problems, board, "Redis", &source, &projection);
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
                for (user, _, _) in &got {
                    if moderated.banned.contains(user) {
                        problems.push(format!("{board}/{user}: banned, but the top read lists it"));
                    }
                }
                let want = ranking(spec.order(), &source);
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
    Ok(checked)
}
