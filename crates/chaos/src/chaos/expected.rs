//! What PostgreSQL must hold, given what the ledger accepted: a member's score and version by
//! its board's rule, the ties by the board's tie break, and the per-member difference.

use std::collections::{BTreeMap, HashMap};

use ledgerboard_core::board::definition::{Order, Sort, TieBreak};
use ledgerboard_core::board::{Operator, Tally, Values};

use super::specs::Spec;
use crate::stack::Placed;

/// One accepted command of a member: its value, and the version and `improved` its event
/// recorded.
pub(super) type Applied = (i64, i64, bool);

/// A member as the check compares it with PostgreSQL: (score, version).
pub(super) type Members = BTreeMap<String, (i64, i64)>;

/// The score and version a member's accepted commands make by the board's rule
/// ([`Operator::expected`]), from each command's value and the version and `improved` its
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
    (operator, sort): (Operator, Sort),
    mut commands: Vec<Applied>,
    base: i64,
    bumps: i64,
) -> Result<Option<Tally>, String> {
    commands.sort_by_key(|c| c.1);
    // The fold compares scores by the board's direction; ties do not enter it.
    let order = Order::of(sort, TieBreak::UserId);
    let value = |c: &Applied| -> Values { (c.0, [0, 0]) };
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
        version: base + t.version + bumps,
        ..t
    };
    match operator {
        Operator::Add => {
            in_order(&commands)?;
            Ok(operator
                .expected(order, commands.iter().map(value))
                .map(moved))
        }
        Operator::Latest => {
            in_order(&commands)?;
            Ok(operator
                .expected(order, commands.iter().map(value))
                .map(moved))
        }
        Operator::Best => {
            let Some(best) = operator.expected(order, commands.iter().map(value)) else {
                return Ok(None);
            };
            let improving: Vec<Applied> = commands.iter().copied().filter(|c| c.2).collect();
            in_order(&improving)?;
            // Folding only the improving events counts each one exactly when it beats the one
            // before: a version short of their number is one that did not improve.
            let chain = operator.expected(order, improving.iter().map(value));
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
                version: improving.len() as i64,
                ..best
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::specs::SPECS;

    const ADD: (Operator, Sort) = (Operator::Add, Sort::Descending);
    const BEST_DESC: (Operator, Sort) = (Operator::Best, Sort::Descending);
    const BEST_ASC: (Operator, Sort) = (Operator::Best, Sort::Ascending);
    const LATEST: (Operator, Sort) = (Operator::Latest, Sort::Descending);

    fn tally(score: i64, version: i64) -> Option<Tally> {
        Some(Tally {
            score,
            rest: [0, 0],
            version,
        })
    }

    #[test]
    fn no_command_expects_no_entry_on_every_kind() {
        for kind in [ADD, BEST_DESC, BEST_ASC, LATEST] {
            assert_eq!(expected(kind, Vec::new(), 0, 0), Ok(None), "{kind:?}");
        }
    }

    #[test]
    fn add_sums_the_deltas_whatever_order_the_ledger_holds_them_in() {
        let commands = vec![(-7, 3, true), (10, 1, true), (5, 2, true)];
        assert_eq!(expected(ADD, commands, 0, 0), Ok(tally(8, 3)));
    }

    #[test]
    fn best_descending_keeps_the_highest_and_counts_only_the_improving_events() {
        // 4 then 9 improved; 2 and the repeated 9 did not, and recorded no version of their own.
        let commands = vec![(4, 1, true), (2, 1, false), (9, 2, true), (9, 2, false)];
        assert_eq!(expected(BEST_DESC, commands, 0, 0), Ok(tally(9, 2)));
    }

    #[test]
    fn best_ascending_keeps_the_lowest() {
        let commands = vec![(120, 1, true), (80, 2, true), (95, 2, false)];
        assert_eq!(expected(BEST_ASC, commands, 0, 0), Ok(tally(80, 2)));
    }

    #[test]
    fn latest_takes_the_value_of_the_highest_version_recorded_not_the_last_in_the_ledger() {
        let commands = vec![(50, 2, true), (70, 3, true), (10, 1, true)];
        assert_eq!(expected(LATEST, commands, 0, 0), Ok(tally(70, 3)));
    }

    #[test]
    fn a_removal_keeps_its_version_and_bans_and_unbans_add_one_each() {
        // Removed at version 4: the entry is made of the commands above it, and one ban and
        // one unban since took two of the versions in between.
        let commands = vec![(3, 5, true), (4, 7, true)];
        assert_eq!(expected(ADD, commands.clone(), 4, 2), Ok(tally(7, 8)));
        assert_eq!(expected(LATEST, commands, 4, 2), Ok(tally(4, 8)));
        let best = vec![(30, 6, true), (20, 7, false)];
        assert_eq!(expected(BEST_DESC, best, 4, 1), Ok(tally(30, 6)));
    }

    #[test]
    fn versions_recorded_twice_or_out_of_range_break_the_rule() {
        // Two commands cannot both have recorded version 1.
        assert!(expected(ADD, vec![(1, 1, true), (2, 1, true)], 0, 0).is_err());
        // Two commands and no ban: versions 1 and 2, not 1 and 3.
        assert!(expected(LATEST, vec![(1, 1, true), (2, 3, true)], 0, 0).is_err());
        // With one ban or unban in between, 1 and 3 is right.
        assert_eq!(
            expected(LATEST, vec![(1, 1, true), (2, 3, true)], 0, 1),
            Ok(tally(2, 3))
        );
        // The removal's own version, or one below it, is not the entry's.
        assert!(expected(ADD, vec![(1, 4, true)], 4, 0).is_err());
    }

    #[test]
    fn best_events_recorded_as_improving_must_each_beat_the_one_before() {
        // 9 then 5, both "improving" on a descending board: 5 did not improve.
        let err = expected(BEST_DESC, vec![(9, 1, true), (5, 2, true)], 0, 0);
        assert!(err.is_err(), "{err:?}");
        // The best submission recorded as not improving.
        let err = expected(BEST_DESC, vec![(5, 1, true), (9, 1, false)], 0, 0);
        assert!(err.is_err(), "{err:?}");
        // A tie with the best does not improve (the earliest keeps it).
        let err = expected(BEST_ASC, vec![(7, 1, true), (7, 2, true)], 0, 0);
        assert!(err.is_err(), "{err:?}");
    }

    fn placed(entries: &[(&str, i64)]) -> Placed {
        entries
            .iter()
            .map(|(user, tie)| ((*user).to_owned(), (10, 1, *tie)))
            .collect()
    }

    #[test]
    fn ties_are_zero_on_the_undeclared_board_and_of_the_sort_sign_elsewhere() {
        let (undeclared, ascending, descending) = (&SPECS[0], &SPECS[1], &SPECS[2]);
        assert!(tie_problems("a", undeclared, &placed(&[("u1", 0), ("u2", 0)])).is_empty());
        assert_eq!(
            tie_problems("a", undeclared, &placed(&[("u1", 3)])),
            ["a/u1: PostgreSQL holds tie 3, against the board's tie break"]
        );
        assert!(tie_problems("b", ascending, &placed(&[("u1", 1), ("u2", 2)])).is_empty());
        assert_eq!(
            tie_problems("b", ascending, &placed(&[("u1", -1), ("u2", 0)])).len(),
            2
        );
        assert!(tie_problems("c", descending, &placed(&[("u1", -1), ("u2", -2)])).is_empty());
        assert_eq!(
            tie_problems("c", descending, &placed(&[("u1", 1)])).len(),
            1
        );
    }

    #[test]
    fn a_tie_two_members_share_is_reported() {
        assert_eq!(
            tie_problems("b", &SPECS[1], &placed(&[("u1", 4), ("u2", 4)])),
            ["b: u2 and u1 share tie 4"]
        );
    }

    #[test]
    fn diff_reports_missing_different_and_extra_members() {
        let want: Members = [("u1", (5, 1)), ("u2", (6, 2)), ("u3", (7, 1))]
            .into_iter()
            .map(|(u, v)| (u.to_owned(), v))
            .collect();
        let mut got = want.clone();
        let mut problems = Vec::new();
        diff(&mut problems, "b", "PostgreSQL", &want, &got);
        assert!(problems.is_empty(), "{problems:?}");
        got.remove("u1");
        got.insert("u2".to_owned(), (6, 3));
        got.insert("u4".to_owned(), (1, 1));
        diff(&mut problems, "b", "PostgreSQL", &want, &got);
        assert_eq!(
            problems,
            [
                "b/u1: PostgreSQL holds None, expected (5, 1)",
                "b/u2: PostgreSQL holds Some((6, 3)), expected (6, 2)",
                "b/u4: PostgreSQL holds a member that should not exist",
            ]
        );
    }
}
