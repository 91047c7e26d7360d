//! The recorded events held to the ledger: each accepted command has its event on its board (or
//! on the period its answer named) and, sent to a board that feeds others, one on every board it
//! feeds (`board::fed_event` of its id, `source_event` its id); no command that was not
//! accepted has an event on any board; every event is an accepted command's; and each answer's
//! version and `improved`, a fed board's in `linked` included, are what the event recorded.
//! Gives the commands each member of each board (fed boards included) must be made of.

use std::collections::{BTreeMap, HashMap};

use ledgerboard_core::board::fed_event;
use ledgerboard_core::model::{BoardId, EventId};
use uuid::Uuid;

use super::expected::Applied;
use super::ledger::{Command, Ledger, Outcome};
use super::specs::{spec, spec_of};

const EVENTS: &str = include_str!("../sql/events.sql");

/// What `score_events` records of one event: the command, the board it wrote (a period of the
/// command's board when that resets), the version and `improved` it recorded, and on a fed
/// board's event the id the command was sent with.
#[derive(Debug)]
pub(super) struct Recorded {
    pub(super) command: Command,
    pub(super) written: BoardId,
    pub(super) version: i64,
    pub(super) improved: bool,
    pub(super) source: Option<Uuid>,
}

/// Per board as stored (a period of a board that resets) and member, the commands its entry is
/// made of.
pub(super) type AppliedByBoard<'l> = BTreeMap<BoardId, BTreeMap<&'l str, Vec<Applied>>>;

/// Every event `score_events` holds, by event id; an event on a board not of the run, or whose
/// other columns are not recorded exactly where its board has them, is a problem.
pub(super) async fn recorded_events(
    client: &tokio_postgres::Client,
    problems: &mut Vec<String>,
) -> anyhow::Result<HashMap<Uuid, Recorded>> {
    let rows = client.query(EVENTS, &[]).await?;
    let mut events: HashMap<Uuid, Recorded> = HashMap::new();
    for r in &rows {
        let id: Uuid = r.try_get(0)?;
        let raw: String = r.try_get(1)?;
        // The league's events are checked apart (`cup.rs`).
        if super::cup::is_cup(&raw) {
            continue;
        }
        let written = BoardId::parse_stored(&raw).ok();
        // A board not of the run, a period of a board that does not reset, or a board that
        // resets written without a period.
        let Some((written, spec)) = written.and_then(|w| spec_of(&w).map(|s| (w, s))) else {
            problems.push(format!("an event on {raw}, not a board of the run"));
            continue;
        };
        let rest: [Option<i64>; 2] = [r.try_get(4)?, r.try_get(5)?];
        let count = spec.columns().count();
        if rest[0].is_some() != (count >= 2) || rest[1].is_some() != (count >= 3) {
            problems.push(format!(
                "event {id} on {raw}: other columns recorded as {rest:?}, on a board of {count} \
                 column(s)"
            ));
        }
        events.insert(
            id,
            Recorded {
                command: Command {
                    board: spec.name,
                    user: r.try_get(2)?,
                    value: (r.try_get(3)?, rest.map(|c| c.unwrap_or(0))),
                },
                written,
                version: r.try_get(6)?,
                improved: r.try_get(7)?,
                source: r.try_get(8)?,
            },
        );
    }
    Ok(events)
}

/// The event id under which `board` records a command sent with id `event` to a board that
/// feeds it; None for a name that is not a board id (never one of the run's).
pub(super) fn fed_id(event: Uuid, board: &str) -> Option<Uuid> {
    let board = BoardId::parse(board).ok()?;
    Some(fed_event(&EventId::from(event), &board).as_uuid())
}

/// The commands the boards' rules must make each member of, per board as stored: the accepted
/// ones, and those whose answer never came if their event exists, each on its board and on
/// every board its board feeds. Each command's event must be its command, on the board (or
/// period) its answer named, and record what its answer stated; each fed board's event must be
/// the same command on that board, fed by it; every event must be a command's or fed by one;
/// and no refused command may have an event anywhere.
pub(super) fn applied_commands<'l>(
    ledger: &'l Ledger,
    events: &HashMap<Uuid, Recorded>,
    problems: &mut Vec<String>,
) -> AppliedByBoard<'l> {
    // Commands whose answer never came count if (and only if) their event exists.
    let mut effective: HashMap<Uuid, &Command> =
        ledger.accepted.iter().map(|(e, c)| (*e, c)).collect();
    for (event, command) in &ledger.unresolved {
        if events.contains_key(event) {
            effective.insert(*event, command);
        }
    }
    let stated: HashMap<Uuid, &Outcome> = ledger
        .order
        .iter()
        .filter_map(|(e, o)| o.as_ref().map(|o| (*e, o)))
        .collect();
    // Per board as stored (a period of a board that resets) and member: each accepted command's
    // value, with the version and `improved` its event recorded. An answered command on a board
    // that resets counts in the period its answer named, which must be the one its event is in:
    // so each period's entries are expected from the commands whose answers named it, and none
    // from another period's.
    let mut applied: AppliedByBoard = BTreeMap::new();
    let mut add = |board: BoardId, command: &'l Command, recorded: &Recorded| {
        applied
            .entry(board)
            .or_default()
            .entry(command.user.as_str())
            .or_default()
            .push((command.value, recorded.version, recorded.improved));
    };
    for (event, command) in &effective {
        let answer = stated.get(event);
        match events.get(event) {
            Some(recorded) if recorded.command == **command && recorded.source.is_none() => {
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
                if let Some(o) = answer
                    && (o.version, o.improved.unwrap_or(recorded.improved))
                        != (recorded.version, recorded.improved)
                {
                    problems.push(format!(
                        "event {event}: answered version {} improved {:?}, recorded version {} \
                         improved {}",
                        o.version, o.improved, recorded.version, recorded.improved
                    ));
                }
                add(expected_in, command, recorded);
            }
            Some(recorded) => problems.push(format!(
                "event {event}: recorded {:?} (fed by {:?}), accepted {command:?}",
                recorded.command, recorded.source
            )),
            None => problems.push(format!("accepted event {event} has no row in score_events")),
        }
        // A linked command is all or nothing: accepted, it has an event on every board its
        // board feeds, the same command under that board's own rule.
        for (i, fed) in spec(command.board).feeds.iter().enumerate() {
            let Some(id) = fed_id(*event, fed) else {
                problems.push(format!("{fed}: not a board id"));
                continue;
            };
            let want = Command {
                board: spec(fed).name,
                user: command.user.clone(),
                value: spec(fed).keyed(&spec(command.board).raw(command.value)),
            };
            match events.get(&id) {
                Some(recorded) if recorded.command == want && recorded.source == Some(*event) => {
                    // What the answer stated of this fed board (in declared order) is what its
                    // event recorded, period included.
                    if let Some(f) = answer.and_then(|o| o.linked.get(i))
                        && (f.board.as_str(), f.version, f.improved, f.period.as_deref())
                            != (
                                *fed,
                                recorded.version,
                                recorded.improved,
                                recorded.written.period(),
                            )
                    {
                        problems.push(format!(
                            "event {event}: answered {f:?} for {fed}, whose event {id} recorded \
                             version {} improved {} in {}",
                            recorded.version, recorded.improved, recorded.written
                        ));
                    }
                    add(recorded.written.clone(), command, recorded);
                }
                Some(recorded) => problems.push(format!(
                    "event {id} on {fed}: recorded {:?} fed by {:?}, but {event} fed it \
                     {want:?}",
                    recorded.command, recorded.source
                )),
                None => problems.push(format!(
                    "accepted event {event} on {} has no event on {fed}, which it feeds (as \
                     {id})",
                    command.board
                )),
            }
        }
    }
    // No refused command, on any board of its set.
    let mut refused_ids: HashMap<Uuid, (&Uuid, &str)> = HashMap::new();
    for (event, command) in &ledger.refused {
        refused_ids.insert(*event, (event, command.board));
        for fed in spec(command.board).feeds {
            if let Some(id) = fed_id(*event, fed) {
                refused_ids.insert(id, (event, fed));
            }
        }
    }
    for (id, recorded) in events {
        if let Some((event, board)) = refused_ids.get(id) {
            problems.push(format!(
                "refused command {event} has an event on {board} ({id}): a refusal writes \
                 nothing on any board"
            ));
            continue;
        }
        match recorded.source {
            None if !effective.contains_key(id) => {
                problems.push(format!("event {id} recorded but never accepted"));
            }
            None => {}
            Some(source) => {
                // Fed by a command accepted on a board that feeds this one, under the id derived
                // from it.
                let feeds = effective
                    .get(&source)
                    .is_some_and(|c| spec(c.board).feeds.contains(&recorded.command.board));
                if !feeds || fed_id(source, recorded.command.board) != Some(*id) {
                    problems.push(format!(
                        "event {id} on {} fed by {source}, which was never accepted on a board \
                         feeding it under that id",
                        recorded.written
                    ));
                }
            }
        }
    }
    applied
}

#[cfg(test)]
#[path = "recorded_tests.rs"]
mod tests;
