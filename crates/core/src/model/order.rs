//! The order of a board: which end wins, its other columns' orders, and how equal tuples are
//! ordered. A leaf below the command path (`board/`), both read paths (`db/reads.rs`,
//! `projection/read.rs`) and the reconciler, which all take the order from here, so they cannot
//! disagree. A board's definition (`board/definition/`) holds it.
//!
//! A board ranks by up to three columns (migration V14): the first is the score, the others
//! are kept in *order-key* form ([`Columns::key`]): as submitted when the column's order is the
//! first column's, negated when it is the other. The whole tuple `(score, col2, col3, tie,
//! user_id)` then sorts in one direction, the board's (`sort`): greater first on descending
//! boards, smaller first on ascending ones, in PostgreSQL's index and in Redis's members
//! (`projection/member.rs`) alike.

use serde::{Deserialize, Serialize};

/// Which end of the board wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    /// Highest score first (rank 1 is the highest).
    Descending,
    /// Lowest score first (a time trial).
    Ascending,
}

/// How members with equal scores are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TieBreak {
    /// By user id in byte order, in the board's direction (descending boards: the greater id
    /// first, as before definitions existed; ascending boards: the smaller id first).
    UserId,
    /// The member who reached the score first ranks first, in the order the database applied
    /// the submissions (a sequence drawn inside the command's statement).
    Earliest,
}

impl Sort {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Descending => "descending",
            Self::Ascending => "ascending",
        }
    }
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "descending" => Some(Self::Descending),
            "ascending" => Some(Self::Ascending),
            _ => None,
        }
    }
    /// Whether score `a` ranks strictly ahead of score `b` on such a board.
    pub fn ahead(self, a: i64, b: i64) -> bool {
        match self {
            Self::Descending => a > b,
            Self::Ascending => a < b,
        }
    }
}

impl TieBreak {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserId => "user_id",
            Self::Earliest => "earliest",
        }
    }
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "user_id" => Some(Self::UserId),
            "earliest" => Some(Self::Earliest),
            _ => None,
        }
    }
}

/// How many columns a board ranks by, and which of its second and third columns order the
/// other way from the first (a racing board: laps descending, time ascending). A board without
/// declared columns has one: its score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Columns {
    count: u8,
    flipped: [bool; 2],
}

/// Most columns a board declares.
pub const MAX_COLUMNS: usize = 3;

impl Columns {
    /// A board of one column, its score (every board before V14).
    pub const ONE: Columns = Columns {
        count: 1,
        flipped: [false; 2],
    };

    /// The columns of a board whose columns have these orders, the first column's first;
    /// None for no column or more than [`MAX_COLUMNS`].
    pub fn of(orders: &[Sort]) -> Option<Self> {
        let (&first, rest) = orders.split_first()?;
        if rest.len() >= MAX_COLUMNS {
            return None;
        }
        let mut flipped = [false; 2];
        for (f, &o) in flipped.iter_mut().zip(rest) {
            *f = o != first;
        }
        Some(Self {
            count: orders.len() as u8,
            flipped,
        })
    }

    /// 1 to 3.
    pub fn count(self) -> usize {
        usize::from(self.count)
    }

    /// Whether the board has a second column (its members are then spelt with their other
    /// columns, `projection/member.rs`).
    pub fn several(self) -> bool {
        self.count > 1
    }

    /// The order-key form of `value` in column `index` (0-based; the first column is the
    /// score, stored as it is): negated when the column orders the other way from the first.
    /// Its own inverse, so it also turns a stored key back into the value.
    pub fn key(self, index: usize, value: i64) -> i64 {
        match index.checked_sub(1).and_then(|i| self.flipped.get(i)) {
            Some(true) => -value,
            _ => value,
        }
    }

    /// The order-key bounds of column `index` whose values lie within `min..=max`.
    pub fn key_bounds(self, index: usize, min: i64, max: i64) -> (i64, i64) {
        let (a, b) = (self.key(index, min), self.key(index, max));
        (a.min(b), a.max(b))
    }

    /// The values of a tuple stored as `score` and `rest` (order-key form), the first
    /// column's first, as many as the board has columns.
    pub fn values(self, score: i64, rest: [i64; 2]) -> Vec<i64> {
        let mut out = Vec::with_capacity(self.count());
        out.push(score);
        for i in 1..self.count() {
            out.push(self.key(i, rest[i - 1]));
        }
        out
    }

    /// The orders of the second and third columns as the seal spells them (`d` or `a`, in the
    /// board's sort: `asc,desc`, and so on), for [`Order::encode`].
    fn encode(self, sort: Sort) -> String {
        (1..self.count())
            .map(|i| {
                let same = !self.flipped[i - 1];
                match (sort, same) {
                    (Sort::Descending, true) | (Sort::Ascending, false) => "desc",
                    _ => "asc",
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    fn decode(sort: Sort, raw: &str) -> Option<Self> {
        let mut orders = vec![sort];
        for part in raw.split(',') {
            orders.push(match part {
                "desc" => Sort::Descending,
                "asc" => Sort::Ascending,
                _ => return None,
            });
        }
        Self::of(&orders)
    }
}

/// The part of an entry's place in its board's order that follows its score: its other
/// columns in order-key form ([`Columns::key`]; 0 past the board's columns) and its tie. Rows
/// carry it as `columns`, `col2`, `col3` and `tie`; Redis spells it into the member
/// (`projection/member.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Key {
    /// How many columns the entry's board has (1 to 3).
    pub columns: u8,
    /// The second and third columns, order-key form.
    pub rest: [i64; 2],
    /// The tie (0 on boards whose ties go by user id).
    pub tie: i64,
}

impl Default for Key {
    fn default() -> Self {
        Self::tie(0)
    }
}

impl Key {
    /// The key of an entry of a one-column board.
    pub fn tie(tie: i64) -> Self {
        Self {
            columns: 1,
            rest: [0; 2],
            tie,
        }
    }

    /// How many columns the entry's board has, 1 to 3.
    pub fn column_count(self) -> usize {
        usize::from(self.columns.clamp(1, MAX_COLUMNS as u8))
    }

    /// Whether two entries with equal scores share a rank (competition and dense): their other
    /// columns are equal (ties aside).
    pub fn same_tuple(self, other: Key) -> bool {
        self.rest == other.rest
    }
}

/// The order of a board: both read paths, the projection and the reconciler sort by it.
///
/// A member's place is `(score, col2, col3, tie, user_id)` (the other columns in order-key
/// form, [`Columns`]), compared in the board's direction: descending
/// boards put the greater tuple first, ascending boards the smaller. `tie` is 0 on `user_id`
/// boards; on `earliest` boards it is drawn from `user_scores_reached_seq` when the score
/// changes, signed by [`Order::tie_sign`] so that the earlier member's tuple sorts first.
/// Redis sees the same tuple as `(score, member)`, `member` spelling `tie` and the user id in
/// one order-preserving string (`projection/member.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Order {
    pub sort: Sort,
    pub tie_break: TieBreak,
    pub columns: Columns,
}

impl Order {
    /// A one-column board's order.
    pub const fn of(sort: Sort, tie_break: TieBreak) -> Self {
        Self {
            sort,
            tie_break,
            columns: Columns::ONE,
        }
    }

    /// How the seal spells the order (`"<sort>:<tie_break>"`, and on a board with columns
    /// `":<order of the second>[,<order of the third>]"`), so that the projection says how to
    /// read itself when PostgreSQL cannot ([`Order::decode`]).
    pub fn encode(self) -> String {
        let base = format!("{}:{}", self.sort.as_str(), self.tie_break.as_str());
        if self.columns.several() {
            format!("{base}:{}", self.columns.encode(self.sort))
        } else {
            base
        }
    }

    /// The order [`Order::encode`] spelt; `None` for anything else.
    pub fn decode(raw: &str) -> Option<Self> {
        let mut parts = raw.split(':');
        let sort = Sort::parse(parts.next()?)?;
        let tie_break = TieBreak::parse(parts.next()?)?;
        let columns = match parts.next() {
            None => Columns::ONE,
            Some(rest) => Columns::decode(sort, rest)?,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            sort,
            tie_break,
            columns,
        })
    }

    /// Whether the full tuple `(score, rest)` of `a` ranks strictly ahead of `b`'s (ties
    /// aside): the order every rank mode and a best board's improvement are judged by.
    pub fn ahead(self, a: (i64, [i64; 2]), b: (i64, [i64; 2])) -> bool {
        match self.sort {
            Sort::Descending => a > b,
            Sort::Ascending => a < b,
        }
    }

    /// The multiplier of the reached sequence's value: 0 (no tie key) on `user_id` boards;
    /// on `earliest` boards −1 when descending (the earlier, smaller sequence value becomes the
    /// greater tie, first in descending order), +1 when ascending.
    pub fn tie_sign(self) -> i64 {
        match (self.tie_break, self.sort) {
            (TieBreak::UserId, _) => 0,
            (TieBreak::Earliest, Sort::Descending) => -1,
            (TieBreak::Earliest, Sort::Ascending) => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earlier_member_sorts_first_in_either_direction() {
        let order = |sort| Order::of(sort, TieBreak::Earliest);
        // Sequence values 5 (earlier) and 9 (later), at one score.
        let (early, late) = (5, 9);
        let desc = order(Sort::Descending).tie_sign();
        // Descending: the greater tie comes first.
        assert!(desc * early > desc * late);
        let asc = order(Sort::Ascending).tie_sign();
        // Ascending: the smaller tie comes first.
        assert!(asc * early < asc * late);
    }

    #[test]
    fn names_round_trip() {
        for s in [Sort::Descending, Sort::Ascending] {
            assert_eq!(Sort::parse(s.as_str()), Some(s));
        }
        for t in [TieBreak::UserId, TieBreak::Earliest] {
            assert_eq!(TieBreak::parse(t.as_str()), Some(t));
        }
        assert!(Sort::Ascending.ahead(1, 2) && Sort::Descending.ahead(2, 1));
    }

    #[test]
    fn a_column_ordered_the_other_way_is_negated_and_the_seal_says_so() {
        use Sort::*;
        // Laps descending, then time ascending.
        let racing = Columns::of(&[Descending, Ascending]).expect("two columns");
        assert_eq!((racing.key(0, 7), racing.key(1, 93_000)), (7, -93_000));
        assert_eq!(racing.key(1, racing.key(1, 93_000)), 93_000);
        assert_eq!(racing.key_bounds(1, 0, 100), (-100, 0));
        assert_eq!(racing.values(7, [-93_000, 0]), vec![7, 93_000]);
        let same = Columns::of(&[Ascending, Ascending, Descending]).expect("three");
        assert_eq!((same.key(1, 5), same.key(2, 5)), (5, -5));
        assert_eq!(Columns::of(&[]), None);
        assert_eq!(Columns::of(&[Descending; 4]), None);
        for order in [
            Order::of(Descending, TieBreak::UserId),
            Order {
                sort: Descending,
                tie_break: TieBreak::Earliest,
                columns: racing,
            },
            Order {
                sort: Ascending,
                tie_break: TieBreak::UserId,
                columns: same,
            },
        ] {
            assert_eq!(
                Order::decode(&order.encode()),
                Some(order),
                "{}",
                order.encode()
            );
        }
        assert_eq!(
            Order {
                sort: Descending,
                tie_break: TieBreak::Earliest,
                columns: racing,
            }
            .encode(),
            "descending:earliest:asc"
        );
        assert_eq!(Order::decode("descending:user_id:up"), None);
        assert_eq!(Order::decode("descending:user_id:asc:x"), None);
        // A tuple is compared whole, in the board's direction, its other columns in key form.
        let desc = Order::of(Descending, TieBreak::UserId);
        assert!(desc.ahead((7, [-90, 0]), (7, [-95, 0])));
        assert!(!desc.ahead((7, [-95, 0]), (7, [-95, 0])));
        assert!(Order::of(Ascending, TieBreak::UserId).ahead((3, [9, 9]), (4, [0, 0])));
    }
}
