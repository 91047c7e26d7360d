//! The run's boards: one per operator, a season, a board of three columns and a linked set,
//! each with its rule and its declaration, and the lookups from a board id (a board or one of
//! its periods) to its spec.

use std::collections::BTreeSet;

use anyhow::Context;
use ledgerboard_core::board::{Operator, Values};
use ledgerboard_core::model::{BoardId, Columns, MAX_ABS_SCORE, Order, Sort, TieBreak};

use crate::stack::Stack;

/// One board of the run: its rule, and the definition the run declares for it (`PUT
/// /v1/boards/{board}` before the load), none for the undeclared add board.
pub(super) struct Spec {
    pub(super) name: &'static str,
    pub(super) operator: Operator,
    /// Which way is better: the operator's fold needs it for best, the checks for the order.
    pub(super) sort: Sort,
    /// How equal tuples are ordered: which ties PostgreSQL must hold (`tie_problems`).
    pub(super) tie_break: TieBreak,
    /// On a board with columns, every column's order, the first's (`sort`) first; empty on a
    /// board of one column. Its declaration says the same.
    pub(super) columns: &'static [Sort],
    /// The values clients submit to a best or latest board are below this, in every column.
    pub(super) draw: i64,
    /// The greatest first-column value the board takes (its declaration's `max`): a command
    /// above it is refused 422, by this board or, sent to a board that feeds it, naming it.
    pub(super) max_score: i64,
    /// The boards a command to this one also applies to (its declaration's `feeds`).
    pub(super) feeds: &'static [&'static str],
    pub(super) declaration: Option<&'static str>,
    /// The `n` of the board's `every <n>s` reset, for the board cut into periods (its
    /// declaration says the same; `declare` checks the api's answer against it).
    pub(super) period_secs: Option<i64>,
}

impl Spec {
    /// The board's columns: how many, and which order the other way from the first.
    pub(super) fn columns(&self) -> Columns {
        Columns::of(self.columns).unwrap_or(Columns::ONE)
    }

    /// The board's order, as every read and the fold compare tuples.
    pub(super) fn order(&self) -> Order {
        Order {
            sort: self.sort,
            tie_break: self.tie_break,
            columns: self.columns(),
        }
    }

    /// A value as the board keys it, from one raw value per column (as a client sends them):
    /// the first column as it is, the others in order-key form (0 past the board's columns).
    pub(super) fn keyed(&self, raw: &[i64]) -> Values {
        let columns = self.columns();
        let at = |i: usize| columns.key(i, raw.get(i).copied().unwrap_or(0));
        (at(0), [at(1), at(2)])
    }

    /// A keyed value's raw values, one per column of the board, as a client sends them.
    pub(super) fn raw(&self, value: Values) -> Vec<i64> {
        self.columns().values(value.0, value.1)
    }

    /// Which board of the set a command to this one reaches refuses `score` (its first column;
    /// the others are drawn within every bound): None when none does, `Some(None)` when this
    /// board does, `Some(Some(fed))` when a board it feeds does (the api validates the board
    /// the command was sent to first, then the fed ones in declared order, and names the
    /// first that refuses). Nothing is written on any board of a refused command.
    pub(super) fn refused_by(&self, score: i64) -> Option<Option<&'static str>> {
        if score > self.max_score {
            return Some(None);
        }
        self.feeds
            .iter()
            .find(|fed| score > spec(fed).max_score)
            .map(|fed| Some(*fed))
    }
}

/// The columns of the linked set: laps descending, then time ascending (a racing board).
const RACING: &[Sort] = &[Sort::Descending, Sort::Ascending];

/// One board per operator, each checked against its own rule: an undeclared add board (deltas),
/// a best board that is a time trial (ascending, the earliest to reach a time ranks first) and
/// a latest board (descending, earliest). The scores submitted are within [`SCORES`], so the
/// ties the earliest boards order are many. A season: a best board (descending, earliest)
/// that resets every 2 s, so that a 12 s run crosses several boundaries with commands in
/// flight; each period is a board of its own that starts from nothing, which `best` makes
/// visible (a member's best of the last period does not carry over).
///
/// Columns (issue 37): `chaos-e`, best over three columns of three orders (descending,
/// ascending, descending), earliest, with values below 5 in each, so that whole tuples tie
/// often and the tie break orders them. And a linked set of two columns: `chaos-f` (best,
/// earliest) feeds `chaos-g` (latest, earliest) and `chaos-h` (best, ties by user id, laps at
/// most 18: a command of 19 laps to `chaos-f` is refused whole, naming `chaos-h`). Clients also
/// post to `chaos-g` and `chaos-h` directly, as to any board: each fed board's members are then
/// made of commands of both paths, in one version sequence. An add board cannot be fed by a
/// best or latest one (the fed board validates the same `score` field, which an add board
/// refuses), so the set's operators are best and latest.
pub(super) const SPECS: [Spec; 8] = [
    Spec {
        name: "chaos-a",
        operator: Operator::Add,
        sort: Sort::Descending,
        tie_break: TieBreak::UserId,
        columns: &[],
        draw: 0,
        max_score: MAX_ABS_SCORE,
        feeds: &[],
        declaration: None,
        period_secs: None,
    },
    Spec {
        name: "chaos-b",
        operator: Operator::Best,
        sort: Sort::Ascending,
        tie_break: TieBreak::Earliest,
        columns: &[],
        draw: SCORES,
        max_score: 1000,
        feeds: &[],
        declaration: Some(
            r#"{"display_name":"chaos time trial","operator":"best","sort":"ascending","tie_break":"earliest","min_score":0,"max_score":1000,"write_policy":"player","attempts":{"ttl_s":600}}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-c",
        operator: Operator::Latest,
        sort: Sort::Descending,
        tie_break: TieBreak::Earliest,
        columns: &[],
        draw: SCORES,
        max_score: 1000,
        feeds: &[],
        declaration: Some(
            r#"{"operator":"latest","sort":"descending","tie_break":"earliest","min_score":0,"max_score":1000}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-d",
        operator: Operator::Best,
        sort: Sort::Descending,
        tie_break: TieBreak::Earliest,
        columns: &[],
        draw: SCORES,
        max_score: 1000,
        feeds: &[],
        declaration: Some(
            r#"{"display_name":"chaos season","operator":"best","sort":"descending","tie_break":"earliest","min_score":0,"max_score":1000,"reset":"every 2s"}"#,
        ),
        period_secs: Some(2),
    },
    Spec {
        name: "chaos-e",
        operator: Operator::Best,
        sort: Sort::Descending,
        tie_break: TieBreak::Earliest,
        columns: &[Sort::Descending, Sort::Ascending, Sort::Descending],
        draw: 5,
        max_score: 100,
        feeds: &[],
        declaration: Some(
            r#"{"display_name":"chaos three columns","operator":"best","tie_break":"earliest","columns":[{"name":"laps","order":"descending","min":0,"max":100},{"name":"time_ms","order":"ascending","min":0,"max":100},{"name":"pits","order":"descending","min":0,"max":100}]}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-f",
        operator: Operator::Best,
        sort: Sort::Descending,
        tie_break: TieBreak::Earliest,
        columns: RACING,
        draw: 20,
        max_score: 1000,
        feeds: &["chaos-g", "chaos-h"],
        declaration: Some(
            r#"{"display_name":"chaos linked source","operator":"best","tie_break":"earliest","columns":[{"name":"laps","order":"descending","min":0,"max":1000},{"name":"time_ms","order":"ascending","min":0,"max":1000}],"feeds":["chaos-g","chaos-h"]}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-g",
        operator: Operator::Latest,
        sort: Sort::Descending,
        tie_break: TieBreak::Earliest,
        columns: RACING,
        draw: 20,
        max_score: 1000,
        feeds: &[],
        declaration: Some(
            r#"{"operator":"latest","tie_break":"earliest","columns":[{"name":"laps","order":"descending","min":0,"max":1000},{"name":"time_ms","order":"ascending","min":0,"max":1000}]}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-h",
        operator: Operator::Best,
        sort: Sort::Descending,
        tie_break: TieBreak::UserId,
        columns: RACING,
        draw: 20,
        max_score: 18,
        feeds: &[],
        declaration: Some(
            r#"{"operator":"best","tie_break":"user_id","columns":[{"name":"laps","order":"descending","min":0,"max":18},{"name":"time_ms","order":"ascending","min":0,"max":1000}]}"#,
        ),
        period_secs: None,
    },
];
pub(super) const BOARDS: [&str; 8] = [
    SPECS[0].name,
    SPECS[1].name,
    SPECS[2].name,
    SPECS[3].name,
    SPECS[4].name,
    SPECS[5].name,
    SPECS[6].name,
    SPECS[7].name,
];
/// The scores submitted to the best and latest boards of one column are below this (one more,
/// a conflicting reuse's value, is still within the declared bounds).
pub(super) const SCORES: i64 = 200;
pub(super) const USERS: u64 = 200;

const STORED_BOARDS: &str = include_str!("../sql/stored_boards.sql");

/// The run's board named `board` (one of [`BOARDS`]).
pub(super) fn spec(board: &str) -> &'static Spec {
    SPECS.iter().find(|s| s.name == board).unwrap_or(&SPECS[0])
}

/// The run's board a stored board id is, or is a period of: None for an id that is not one of
/// the run's, and for one that has a period exactly when its board does not reset (every
/// command of a board that resets lands in a period, none of another does).
pub(super) fn spec_of(board: &BoardId) -> Option<&'static Spec> {
    let spec = SPECS.iter().find(|s| s.name == board.base().as_str())?;
    (spec.period_secs.is_some() == board.period().is_some()).then_some(spec)
}

/// Whether a stored board id (a board or one of its periods, as PostgreSQL, the outbox and a
/// ban's answer name it) is one of the run's.
pub(super) fn of_the_run(board: &str) -> bool {
    BoardId::parse_stored(board)
        .ok()
        .as_ref()
        .and_then(spec_of)
        .is_some()
}

/// The boards the run compares, as stored: the boards that do not reset, and every period of
/// the one that does that holds an entry or an event (a period is a board of its own in
/// PostgreSQL and Redis; a period where nothing landed has nothing to compare). Any other board
/// id found is listed too, so that the checks report it.
pub(super) async fn run_boards(stack: &Stack) -> anyhow::Result<Vec<BoardId>> {
    let mut boards: BTreeSet<BoardId> = SPECS
        .iter()
        .filter(|s| s.period_secs.is_none())
        .map(|s| BoardId::parse(s.name))
        .collect::<Result<_, _>>()?;
    let client = stack.db.client().await?;
    for r in client.query(STORED_BOARDS, &[]).await? {
        let raw: String = r.try_get(0)?;
        // The league's cohorts are checked apart (`cup.rs`).
        if super::cup::is_cup(&raw) {
            continue;
        }
        boards.insert(BoardId::parse_stored(&raw).with_context(|| format!("board id {raw:?}"))?);
    }
    Ok(boards.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::client::reused;

    #[test]
    fn a_value_is_keyed_in_its_boards_columns_orders_and_sent_as_submitted() {
        // chaos-e: laps descending, time ascending (negated), pits descending.
        let e = spec("chaos-e");
        assert_eq!(e.keyed(&[4, 1, 3]), (4, [-1, 3]));
        assert_eq!(e.raw((4, [-1, 3])), [4, 1, 3]);
        // chaos-f: two columns; nothing past them.
        assert_eq!(spec("chaos-f").keyed(&[12, 30]), (12, [-30, 0]));
        assert_eq!(spec("chaos-f").raw((12, [-30, 0])), [12, 30]);
        // A board of one column: the value alone.
        assert_eq!(spec("chaos-c").keyed(&[7]), (7, [0, 0]));
        assert_eq!(spec("chaos-c").raw((7, [0, 0])), [7]);
    }

    #[test]
    fn a_reuse_changes_the_last_column_within_every_bound() {
        // chaos-f: the time one more, stored negated; the laps stay (chaos-h's bound).
        let f = spec("chaos-f");
        assert_eq!(reused(f, f.keyed(&[18, 19])), f.keyed(&[18, 20]));
        assert_eq!(f.refused_by(reused(f, f.keyed(&[18, 19])).0), None);
        let e = spec("chaos-e");
        assert_eq!(reused(e, e.keyed(&[4, 0, 4])), e.keyed(&[4, 0, 5]));
        // One column: the value one more; a delta of -1 becomes 1, never 0.
        assert_eq!(reused(spec("chaos-b"), (199, [0, 0])), (200, [0, 0]));
        assert_eq!(reused(spec("chaos-a"), (-1, [0, 0])), (1, [0, 0]));
    }

    #[test]
    fn a_value_past_a_fed_boards_bound_is_refused_naming_it() {
        let (f, h) = (spec("chaos-f"), spec("chaos-h"));
        assert_eq!(f.refused_by(18), None);
        assert_eq!(f.refused_by(19), Some(Some("chaos-h")));
        // Sent to chaos-h itself: refused by the board sent to.
        assert_eq!(h.refused_by(19), Some(None));
        assert_eq!(spec("chaos-g").refused_by(19), None);
        // The draw reaches the bound, so some commands of every run are refused.
        assert!(f.draw - 1 > h.max_score);
    }

    #[test]
    fn every_fed_board_is_declared_with_its_feeders_columns_and_feeds_none() {
        for s in SPECS.iter().filter(|s| !s.feeds.is_empty()) {
            for fed in s.feeds {
                let fed = spec(fed);
                assert_eq!(fed.columns, s.columns, "{}", fed.name);
                assert!(fed.feeds.is_empty(), "{}", fed.name);
                assert!(fed.declaration.is_some(), "{}", fed.name);
            }
        }
    }
}
