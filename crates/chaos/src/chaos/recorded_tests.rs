//! Tests of `recorded`: which events count for which board, and what breaks the ledger.

use super::*;
use crate::chaos::ledger::{FedAnswer, Landed};

const P1: &str = "20261202T074744Z";
const P2: &str = "20261202T074746Z";

fn command(board: &'static str, user: &str, value: i64) -> Command {
    Command {
        board,
        user: user.to_owned(),
        value: (value, [0, 0]),
    }
}

/// A command of the linked set: laps and time (stored negated: it orders the other way).
fn racing(board: &'static str, user: &str, laps: i64, time: i64) -> Command {
    Command {
        board,
        user: user.to_owned(),
        value: (laps, [-time, 0]),
    }
}

fn recorded(command: Command, written: &str, version: i64) -> Recorded {
    Recorded {
        command,
        written: BoardId::parse_stored(written).expect("a stored board id"),
        version,
        improved: true,
        source: None,
    }
}

fn fed(command: Command, source: Uuid, version: i64, improved: bool) -> (Uuid, Recorded) {
    let id = fed_id(source, command.board).expect("a board id");
    let written = command.board;
    let mut r = recorded(command, written, version);
    r.source = Some(source);
    r.improved = improved;
    (id, r)
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

fn board(name: &str) -> BoardId {
    BoardId::parse(name).expect("board")
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
    let a = board("chaos-a");
    let d = board("chaos-d").in_period(P1).expect("period");
    let mut chaos_a = applied[&a]["u1"].clone();
    chaos_a.sort();
    assert_eq!(chaos_a, [((-2, [0, 0]), 2, true), ((5, [0, 0]), 1, true)]);
    assert_eq!(applied[&d]["u1"], [((40, [0, 0]), 1, true)]);
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
                "event {}: recorded {:?} (fed by None), accepted {:?}",
                e(2),
                command("chaos-a", "u1", 6),
                command("chaos-a", "u1", 5)
            ),
            format!("event {} recorded but never accepted", e(4)),
        ]
    );
    let p1 = board("chaos-d").in_period(P1).expect("period");
    assert_eq!(applied.keys().collect::<Vec<_>>(), [&p1]);
}

#[test]
fn a_linked_command_counts_on_every_board_it_feeds_beside_the_direct_ones() {
    let mut ledger = Ledger::default();
    let mut events = HashMap::new();
    // 12 laps in 30 to chaos-f feeds chaos-g and chaos-h; chaos-g also took a direct command
    // of the same user, before it (version 1).
    let sent = racing("chaos-f", "u1", 12, 30);
    ledger.accepted.insert(id(1), sent.clone());
    events.insert(id(1), recorded(sent, "chaos-f", 1));
    let (g, fed_g) = fed(racing("chaos-g", "u1", 12, 30), id(1), 2, true);
    let (h, fed_h) = fed(racing("chaos-h", "u1", 12, 30), id(1), 1, false);
    events.insert(g, fed_g);
    events.insert(h, fed_h);
    ledger.accepted.insert(id(2), racing("chaos-g", "u1", 3, 9));
    events.insert(id(2), recorded(racing("chaos-g", "u1", 3, 9), "chaos-g", 1));
    let mut problems = Vec::new();
    let applied = applied_commands(&ledger, &events, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        applied[&board("chaos-f")]["u1"],
        [((12, [-30, 0]), 1, true)]
    );
    let mut on_g = applied[&board("chaos-g")]["u1"].clone();
    on_g.sort_by_key(|c| c.1);
    assert_eq!(on_g, [((3, [-9, 0]), 1, true), ((12, [-30, 0]), 2, true)]);
    // chaos-h's own rule kept its standing tuple: recorded as not improving.
    assert_eq!(
        applied[&board("chaos-h")]["u1"],
        [((12, [-30, 0]), 1, false)]
    );
}

#[test]
fn an_accepted_linked_command_missing_on_a_fed_board_or_fed_under_another_id_is_a_problem() {
    let mut ledger = Ledger::default();
    let mut events = HashMap::new();
    let sent = racing("chaos-f", "u1", 12, 30);
    ledger.accepted.insert(id(1), sent.clone());
    events.insert(id(1), recorded(sent, "chaos-f", 1));
    // Only chaos-g has it; and a chaos-h event naming it as source, under an id of its own.
    let (g, fed_g) = fed(racing("chaos-g", "u1", 12, 30), id(1), 1, true);
    events.insert(g, fed_g);
    let (_, mut stray) = fed(racing("chaos-h", "u1", 12, 30), id(1), 1, true);
    stray.written = board("chaos-h");
    events.insert(id(7), stray);
    let mut problems = Vec::new();
    applied_commands(&ledger, &events, &mut problems);
    problems.sort();
    let h = fed_id(id(1), "chaos-h").expect("an id");
    assert_eq!(
        problems,
        [
            format!(
                "accepted event {} on chaos-f has no event on chaos-h, which it feeds (as {h})",
                id(1)
            ),
            format!(
                "event {} on chaos-h fed by {}, which was never accepted on a board feeding it \
                 under that id",
                id(7),
                id(1)
            ),
        ]
    );
}

#[test]
fn a_command_not_accepted_has_no_event_on_any_board_of_its_set() {
    let mut ledger = Ledger::default();
    let mut events = HashMap::new();
    // Refused (19 laps: past chaos-h's bounds), yet chaos-g recorded it.
    ledger.refused.insert(id(1), racing("chaos-f", "u1", 19, 3));
    let (g, fed_g) = fed(racing("chaos-g", "u1", 19, 3), id(1), 1, true);
    events.insert(g, fed_g);
    // Unanswered, and not recorded on chaos-f, yet chaos-h recorded it.
    ledger
        .unresolved
        .insert(id(2), racing("chaos-f", "u2", 4, 3));
    let (h, fed_h) = fed(racing("chaos-h", "u2", 4, 3), id(2), 1, true);
    events.insert(h, fed_h);
    let mut problems = Vec::new();
    let applied = applied_commands(&ledger, &events, &mut problems);
    problems.sort();
    assert_eq!(
        problems,
        [
            format!(
                "event {h} on chaos-h fed by {}, which was never accepted on a board feeding \
                 it under that id",
                id(2)
            ),
            format!(
                "refused command {} has an event on chaos-g ({g}): a refusal writes nothing on \
                 any board",
                id(1)
            ),
        ]
    );
    assert!(applied.is_empty());
}

#[test]
fn an_answer_must_state_what_the_events_recorded_on_every_board() {
    let mut ledger = Ledger::default();
    let mut events = HashMap::new();
    let sent = racing("chaos-f", "u1", 12, 30);
    ledger.accepted.insert(id(1), sent.clone());
    events.insert(id(1), recorded(sent, "chaos-f", 1));
    let (g, fed_g) = fed(racing("chaos-g", "u1", 12, 30), id(1), 2, true);
    let (h, fed_h) = fed(racing("chaos-h", "u1", 12, 30), id(1), 1, true);
    events.insert(g, fed_g);
    events.insert(h, fed_h);
    let fed_answer = |board: &str, version: i64| FedAnswer {
        board: board.to_owned(),
        score: 12,
        scores: Some(vec![12, 30]),
        version,
        improved: true,
        period: None,
    };
    let answer = |g_version: i64| Outcome {
        score: 12,
        scores: Some(vec![12, 30]),
        version: 1,
        improved: Some(true),
        period: None,
        linked: vec![fed_answer("chaos-g", g_version), fed_answer("chaos-h", 1)],
    };
    ledger.order.push((id(1), Some(answer(2))));
    let mut problems = Vec::new();
    applied_commands(&ledger, &events, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    // chaos-g's answer stated version 3; its event recorded 2.
    ledger.order[0].1 = Some(answer(3));
    applied_commands(&ledger, &events, &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("for chaos-g"), "{problems:?}");
    // The answer's own version against the source's event.
    let mut problems = Vec::new();
    ledger.order[0].1 = Some(Outcome {
        version: 2,
        ..answer(2)
    });
    applied_commands(&ledger, &events, &mut problems);
    assert_eq!(
        problems,
        [format!(
            "event {}: answered version 2 improved Some(true), recorded version 1 improved true",
            id(1)
        )]
    );
}
