//! What PostgreSQL must hold, given what the ledger accepted: a member's score and version by
//! its board's rule, the ties by the board's tie break, and the per-member difference.

use std::collections::{BTreeMap, HashMap};

use ledgerboard_core::board::{BoardKind, Tally};
use ledgerboard_core::definition::Sort;

use super::specs::Spec;
use crate::stack::Placed;

/// One accepted command of a member: its value, and the version and `improved` its event
/// recorded.
pub(super) type Applied = (i64, i64, bool);

/// A member as the check compares it with PostgreSQL: (score, version).
pub(super) type Members = BTreeMap<String, (i64, i64)>;

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
pub(super) fn expected(
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
pub(super) fn tie_problems(board: &str, spec: &Spec, source: &Placed) -> Vec<String> {
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
pub(super) fn diff<V: PartialEq + std::fmt::Debug>(
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
