//! The final check: every accepted command against `score_events`, every member against what
//! its board's rule makes of them, the moderation against what PostgreSQL keeps, and Redis and
//! a top read against PostgreSQL's visible entries.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ledgerboard_core::model::BoardId;
use uuid::Uuid;

use super::api::bounded_read;
use super::expected::{Applied, Members, diff, expected, tie_problems};
use super::ledger::{Command, Ledger};
use super::moderation;
use super::ranking::{page_scores, ranking};
use super::seasons::{DbClock, SeasonChecks, in_flight_periods};
use super::specs::{run_boards, spec_of};
use crate::stack::Stack;

const EVENTS: &str = include_str!("../sql/events.sql");
const MEMBERS: &str = include_str!("../sql/members.sql");
const REMOVED_ENTRIES: &str = include_str!("../sql/removed_entries.sql");
const BANNED_USERS: &str = include_str!("../sql/banned_users.sql");

/// What `score_events` records of one event: the command, the board it wrote (a period of the
/// command's board when that resets), and the version and `improved` it recorded.
struct Recorded {
    command: Command,
    written: BoardId,
    version: i64,
    improved: bool,
}

/// The contract, checked against PostgreSQL and Redis.
pub(super) async fn check(
    stack: &Stack,
    ledger: &Ledger,
    clock: &DbClock,
    seasons: &mut SeasonChecks,
) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let client = stack.db.client().await?;
    let events = recorded_events(&client, &mut problems).await?;
    let mut applied = applied_commands(ledger, &events, &mut problems);
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
            match expected((spec.operator, spec.sort), after, base, bumps) {
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

/// Every event `score_events` holds, by event id; an event on a board not of the run is a
/// problem.
async fn recorded_events(
    client: &tokio_postgres::Client,
    problems: &mut Vec<String>,
) -> anyhow::Result<HashMap<Uuid, Recorded>> {
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
    Ok(events)
}

/// The commands the board's rule must make each member of, per board as stored: the accepted
/// ones, and those whose answer never came if their event exists. Each command's event must be
/// its command, on the board (or period) its answer named; every event must be a command's.
fn applied_commands<'l>(
    ledger: &'l Ledger,
    events: &HashMap<Uuid, Recorded>,
    problems: &mut Vec<String>,
) -> BTreeMap<BoardId, BTreeMap<&'l str, Vec<Applied>>> {
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
    applied
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::ledger::Landed;

    const P1: &str = "20261202T074744Z";
    const P2: &str = "20261202T074746Z";

    fn command(board: &'static str, user: &str, value: i64) -> Command {
        Command {
            board,
            user: user.to_owned(),
            value,
        }
    }

    fn recorded(command: Command, written: &str, version: i64) -> Recorded {
        Recorded {
            command,
            written: BoardId::parse_stored(written).expect("a stored board id"),
            version,
            improved: true,
        }
    }

    fn landed(period: &str) -> Landed {
        Landed {
            period: period.to_owned(),
            sent: 0.0,
            answered: 0.0,
        }
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn each_command_counts_on_the_board_or_period_its_answer_named() {
        let mut ledger = Ledger::default();
        let mut events = HashMap::new();
        ledger.accepted.insert(id(1), command("chaos-a", "u1", 5));
        events.insert(id(1), recorded(command("chaos-a", "u1", 5), "chaos-a", 1));
        ledger.accepted.insert(id(2), command("chaos-d", "u1", 40));
        ledger.landed.insert(id(2), landed(P1));
        events.insert(
            id(2),
            recorded(command("chaos-d", "u1", 40), &format!("chaos-d~{P1}"), 1),
        );
        // No answer came, but the event exists: it counts.
        ledger
            .unresolved
            .insert(id(3), command("chaos-a", "u1", -2));
        events.insert(id(3), recorded(command("chaos-a", "u1", -2), "chaos-a", 2));
        // No answer and no event: it does not.
        ledger.unresolved.insert(id(4), command("chaos-a", "u2", 9));
        let mut problems = Vec::new();
        let applied = applied_commands(&ledger, &events, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        let a = BoardId::parse("chaos-a").expect("board");
        let d = BoardId::parse("chaos-d")
            .expect("board")
            .in_period(P1)
            .expect("period");
        let mut chaos_a = applied[&a]["u1"].clone();
        chaos_a.sort();
        assert_eq!(chaos_a, [(-2, 2, true), (5, 1, true)]);
        assert_eq!(applied[&d]["u1"], [(40, 1, true)]);
        assert_eq!(applied.len(), 2);
    }

    #[test]
    fn an_event_elsewhere_than_its_answer_named_or_unlike_its_command_is_a_problem() {
        let mut ledger = Ledger::default();
        let mut events = HashMap::new();
        // Answered P1, recorded in P2: expected in P1, and reported.
        ledger.accepted.insert(id(1), command("chaos-d", "u1", 40));
        ledger.landed.insert(id(1), landed(P1));
        events.insert(
            id(1),
            recorded(command("chaos-d", "u1", 40), &format!("chaos-d~{P2}"), 1),
        );
        // Recorded with another value.
        ledger.accepted.insert(id(2), command("chaos-a", "u1", 5));
        events.insert(id(2), recorded(command("chaos-a", "u1", 6), "chaos-a", 1));
        // Accepted, never recorded; recorded, never accepted.
        ledger.accepted.insert(id(3), command("chaos-a", "u2", 1));
        events.insert(id(4), recorded(command("chaos-a", "u3", 1), "chaos-a", 1));
        let mut problems = Vec::new();
        let applied = applied_commands(&ledger, &events, &mut problems);
        problems.sort();
        let e = |n| id(n).to_string();
        assert_eq!(
            problems,
            [
                format!("accepted event {} has no row in score_events", e(3)),
                format!(
                    "event {}: its answer named chaos-d~{P1}, but it was recorded in chaos-d~{P2}",
                    e(1)
                ),
                format!(
                    "event {}: recorded {:?}, accepted {:?}",
                    e(2),
                    command("chaos-a", "u1", 6),
                    command("chaos-a", "u1", 5)
                ),
                format!("event {} recorded but never accepted", e(4)),
            ]
        );
        let p1 = BoardId::parse("chaos-d")
            .expect("board")
            .in_period(P1)
            .expect("period");
        assert_eq!(applied.keys().collect::<Vec<_>>(), [&p1]);
    }
}
