//! The order of a board: which end wins and how equal scores are ordered. A leaf below the
//! command path (`board/`), both read paths (`db/reads.rs`, `projection/read.rs`) and the
//! reconciler, which all take the order from here, so they cannot disagree. A board's
//! definition (`board/definition/`) holds it.

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

/// The order of a board: both read paths, the projection and the reconciler sort by it.
///
/// A member's place is `(score, tie, user_id)`, compared in the board's direction: descending
/// boards put the greater tuple first, ascending boards the smaller. `tie` is 0 on `user_id`
/// boards; on `earliest` boards it is drawn from `user_scores_reached_seq` when the score
/// changes, signed by [`Order::tie_sign`] so that the earlier member's tuple sorts first.
/// Redis sees the same tuple as `(score, member)`, `member` spelling `tie` and the user id in
/// one order-preserving string (`projection/member.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Order {
    pub sort: Sort,
    pub tie_break: TieBreak,
}

impl Order {
    /// How the seal spells the order (`"<sort>:<tie_break>"`), so that the projection says
    /// how to read itself when PostgreSQL cannot ([`Order::decode`]).
    pub fn encode(self) -> String {
        format!("{}:{}", self.sort.as_str(), self.tie_break.as_str())
    }

    /// The order [`Order::encode`] spelt; `None` for anything else.
    pub fn decode(raw: &str) -> Option<Self> {
        let (sort, tie_break) = raw.split_once(':')?;
        Some(Self {
            sort: Sort::parse(sort)?,
            tie_break: TieBreak::parse(tie_break)?,
        })
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
        let order = |sort| Order {
            sort,
            tie_break: TieBreak::Earliest,
        };
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
}
