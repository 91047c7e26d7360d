//! What PostgreSQL must hold, given what the ledger accepted: a member's tuple and version by
//! its board's rule, the keys (column count, other columns, ties) by the board's columns and
//! tie break, and the per-member difference.

use std::collections::{BTreeMap, HashMap};

use ledgerboard_core::board::{Operator, Tally, Values};
use ledgerboard_core::model::Order;

use super::specs::Spec;
use crate::stack::Placed;

/// One accepted command of a member: its value (every column, the others in order-key form),
/// and the version and `improved` its event recorded.
pub(super) type Applied = (Values, i64, bool);

/// A member as the check compares it with PostgreSQL: (score, other columns in order-key form,
/// version).
pub(super) type Members = BTreeMap<String, (i64, [i64; 2], i64)>;

/// The tuple and version a member's accepted commands make by the board's rule
/// ([`Operator::expected`], in the board's order: tuples compared whole, column by column),
/// from each command's value and the version and `improved` its event recorded; an error
/// naming what is wrong when the recorded events themselves break the rule. `commands` are
/// those after the member's last removal, whose version was `base` (0: never removed), and
/// `bumps` bans and unbans changed the entry since (one version each). Concurrent commands of
/// one member are applied in an order no client knows, so the order comes from the recorded
/// versions where the rule needs one:
/// - add: the sums of the deltas, column by column, and their count (any order);
/// - best: the best tuple by the board's order (any order: equal tuples are equal), kept whole;
///   the version is `base`, the number of events recorded as improving and `bumps`, and those
///   events, in version order, each beat the one before;
/// - latest: the tuple of the highest version recorded.
///
/// The versions recorded (improving ones on a best board) are distinct and between `base + 1`
/// and the member's version: exactly `base + 1..=base + n` when no ban or unban changed the
/// entry (the versions a ban or unban took are not recorded per member, so with bumps the
/// check is that the commands' versions leave exactly `bumps` of that range to them).
pub(super) fn expected(
    (operator, order): (Operator, Order),
    mut commands: Vec<Applied>,
    base: i64,
    bumps: i64,
) -> Result<Option<Tally>, String> {
    commands.sort_by_key(|c| c.1);
    let value = |c: &Applied| -> Values { c.0 };
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
        Operator::Add | Operator::Latest => {
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
                || chain.map(|t| (t.score, t.rest)) != Some((best.score, best.rest))
            {
                return Err(format!(
                    "the events recorded as improving, {:?}, do not each improve to the best \
                     {:?}",
                    improving.iter().map(|c| c.0).collect::<Vec<_>>(),
                    (best.score, best.rest)
                ));
            }
            Ok(Some(moved(Tally {
                version: improving.len() as i64,
                ..best
            })))
        }
    }
}

/// The keys PostgreSQL holds, as the board's columns and tie break want them: the board's
/// column count on every row (a row says by itself how Redis spells its member), 0 in every
/// column past the board's, and the tie 0 where ties go by user id, and on an earliest board
/// nonzero, of the sign of the board's direction (`Order::tie_sign`: ascending +1, descending
/// -1) and unique.
pub(super) fn tie_problems(board: &str, spec: &Spec, source: &Placed) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen: HashMap<i64, &str> = HashMap::new();
    let (sign, count) = (spec.order().tie_sign(), spec.columns().count());
    for (user, (_, _, key)) in source {
        let tie = key.tie;
        if tie.signum() != sign {
            problems.push(format!(
                "{board}/{user}: PostgreSQL holds tie {tie}, against the board's tie break"
            ));
        }
        if usize::from(key.columns) != count || key.rest[count.max(1) - 1..].iter().any(|c| *c != 0)
        {
            problems.push(format!(
                "{board}/{user}: PostgreSQL holds {} column(s) and {:?}, on a board of {count}",
                key.columns, key.rest
            ));
        }
        if tie != 0
            && let Some(other) = seen.insert(tie, user)
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
    use crate::chaos::specs::{SPECS, spec};
    use ledgerboard_core::model::{Columns, Key, Sort, TieBreak};

    const DESC: Order = Order::of(Sort::Descending, TieBreak::UserId);
    const ADD: (Operator, Order) = (Operator::Add, DESC);
    const BEST_DESC: (Operator, Order) = (Operator::Best, DESC);
    const BEST_ASC: (Operator, Order) =
        (Operator::Best, Order::of(Sort::Ascending, TieBreak::UserId));
    const LATEST: (Operator, Order) = (Operator::Latest, DESC);

    /// [`super::expected`] of one-column commands (value, version, improved).
    fn expected(
        kind: (Operator, Order),
        commands: Vec<(i64, i64, bool)>,
        base: i64,
        bumps: i64,
    ) -> Result<Option<Tally>, String> {
        let commands = commands
            .into_iter()
            .map(|(v, version, improved)| ((v, [0, 0]), version, improved))
            .collect();
        super::expected(kind, commands, base, bumps)
    }

    /// The order of a board of the run (the fold ignores its tie break).
    fn order_of(board: &str) -> Order {
        spec(board).order()
    }

    fn tuple(score: i64, rest: [i64; 2], version: i64) -> Option<Tally> {
        Some(Tally {
            score,
            rest,
            version,
        })
    }

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
            .map(|(user, tie)| ((*user).to_owned(), (10, 1, Key::tie(*tie))))
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
        let want: BTreeMap<String, (i64, i64)> = [("u1", (5, 1)), ("u2", (6, 2)), ("u3", (7, 1))]
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

    #[test]
    fn best_keeps_the_whole_better_tuple_in_the_boards_order_never_a_mix() {
        // chaos-f: laps descending, time ascending (stored negated). 10 laps in 50 then in 40
        // improved; 9 laps in 10 (fewer laps) and 10 laps in 45 (slower) did not. A fold of
        // the first column alone, or of each column apart (10 laps in 10), gives another.
        let racing = (Operator::Best, order_of("chaos-f"));
        assert_eq!(
            order_of("chaos-f").columns,
            Columns::of(&[Sort::Descending, Sort::Ascending]).expect("two")
        );
        let commands = vec![
            ((10, [-50, 0]), 1, true),
            ((9, [-10, 0]), 1, false),
            ((10, [-40, 0]), 2, true),
            ((10, [-45, 0]), 2, false),
        ];
        assert_eq!(
            super::expected(racing, commands, 0, 0),
            Ok(tuple(10, [-40, 0], 2))
        );
    }

    #[test]
    fn best_judges_an_improving_event_on_the_whole_tuple() {
        let racing = (Operator::Best, order_of("chaos-f"));
        // Same laps, slower: recorded as improving, it did not improve.
        let slower = vec![((10, [-40, 0]), 1, true), ((10, [-50, 0]), 2, true)];
        let err = super::expected(racing, slower, 0, 0);
        assert!(err.is_err(), "{err:?}");
        // Same laps, faster: recorded as not improving, it was the best.
        let faster = vec![((10, [-50, 0]), 1, true), ((10, [-40, 0]), 1, false)];
        let err = super::expected(racing, faster, 0, 0);
        assert!(err.is_err(), "{err:?}");
    }

    #[test]
    fn three_columns_are_compared_in_turn_each_in_its_own_order() {
        // chaos-e: laps descending, time ascending, pits descending. (4, 1, 3) beats (4, 1, 2)
        // on pits and (4, 2, 4) on time; the equal (4, 1, 3) later does not improve.
        let three = (Operator::Best, order_of("chaos-e"));
        let commands = vec![
            ((4, [-1, 2]), 1, true),
            ((4, [-2, 4]), 1, false),
            ((4, [-1, 3]), 2, true),
            ((4, [-1, 3]), 2, false),
            ((3, [0, 4]), 2, false),
        ];
        assert_eq!(
            super::expected(three, commands, 0, 0),
            Ok(tuple(4, [-1, 3], 2))
        );
    }

    #[test]
    fn latest_replaces_the_whole_tuple_and_add_adds_column_by_column() {
        let latest = (Operator::Latest, order_of("chaos-g"));
        let commands = vec![((3, [-9, 0]), 2, true), ((7, [-1, 0]), 1, true)];
        assert_eq!(
            super::expected(latest, commands.clone(), 0, 0),
            Ok(tuple(3, [-9, 0], 2))
        );
        // Deltas in order-key form add up in it.
        let add = (Operator::Add, order_of("chaos-g"));
        assert_eq!(
            super::expected(add, commands, 0, 0),
            Ok(tuple(10, [-10, 0], 2))
        );
    }

    fn keyed(entries: &[(&str, u8, [i64; 2], i64)]) -> Placed {
        entries
            .iter()
            .map(|(user, columns, rest, tie)| {
                let key = Key {
                    columns: *columns,
                    rest: *rest,
                    tie: *tie,
                };
                ((*user).to_owned(), (10, 1, key))
            })
            .collect()
    }

    #[test]
    fn a_row_must_have_its_boards_columns_and_tie_break() {
        let (e, h) = (spec("chaos-e"), spec("chaos-h"));
        // chaos-h: two columns, ties by user id.
        assert!(
            tie_problems(
                "h",
                h,
                &keyed(&[("u1", 2, [-5, 0], 0), ("u2", 2, [-5, 0], 0)])
            )
            .is_empty()
        );
        assert_eq!(
            tie_problems("h", h, &keyed(&[("u1", 2, [-5, 0], -3)])),
            ["h/u1: PostgreSQL holds tie -3, against the board's tie break"]
        );
        assert_eq!(
            tie_problems(
                "h",
                h,
                &keyed(&[("u1", 1, [-5, 0], 0), ("u2", 2, [-5, 4], 0)])
            ),
            [
                "h/u1: PostgreSQL holds 1 column(s) and [-5, 0], on a board of 2",
                "h/u2: PostgreSQL holds 2 column(s) and [-5, 4], on a board of 2",
            ]
        );
        // chaos-e: three columns, earliest on a descending board.
        assert!(tie_problems("e", e, &keyed(&[("u1", 3, [-1, 4], -1)])).is_empty());
        assert_eq!(
            tie_problems("e", e, &keyed(&[("u1", 2, [-1, 0], -1)])).len(),
            1
        );
        // A one-column board's row holds nothing in the other columns.
        assert_eq!(
            tie_problems("c", spec("chaos-c"), &keyed(&[("u1", 1, [0, 7], -1)])).len(),
            1
        );
    }
}
