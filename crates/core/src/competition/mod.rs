//! Competitions (issue 39): tournaments, cohorts and leagues over a declared board that resets.
//! A competition's *run* is a period of its board: a one-off tournament's board resets by hand
//! and its declaration writes the resets at its start and end; a recurring one's runs are its
//! board's scheduled periods. Scores, reads, projection and reconciliation are the board's: the
//! command statement admits a score only inside the run's window and, when entry is required,
//! only from an entrant of the run (`board/sql/command/head.sql`'s `admission`).
//!
//! With a cohort size, each entry is placed in a cohort of its run, and the command statement
//! sends the player's scores to that cohort's board, `<board>~<period>~<cohort>`
//! (`BoardId::in_cohort`): every cohort ranks separately, read from its projection or
//! PostgreSQL like any board. A league orders tiers: entries are placed among the cohorts of
//! the player's tier, and each run's close moves the top and bottom of every cohort a tier up
//! and down. Entry is one call that decides the cap and the cohort under the run's row lock
//! (`sql/functions/lb_competition_enter.sql`).
//!
//! A run closes like a period ([`close`]): every cohort's standings frozen with its digest, and
//! the run's record, prizes, moves and one digest chained to the previous run's, which
//! [`verify`] checks run after run.
//!
//! Here: the types and errors; `declare.rs` (declaring, reading, listing), `enter.rs`,
//! `group.rs` (entries that arrive together committed in one transaction),
//! `close.rs`, `verify.rs`, `results.rs` (standings with prizes, live or frozen; a player's
//! history).

mod close;
mod declare;
mod enter;
mod group;
mod results;
mod verify;

use serde::{Deserialize, Serialize};

use crate::db::StoreError;
use crate::model::BoardId;

pub use close::{
    CloseOutcome, Closes, RecentRun, RunClosed, close, close_due, close_ended, closed, recent_runs,
};
pub use declare::{declare, get, list};
pub use enter::{Entered, enter};
pub use group::EntryGroups;
pub use results::{History, MAX_HISTORY, Placed, Results, RunEntry, history, results};
pub use verify::{RunVerification, Verification, verify};

/// Most competitions on one page.
pub const MAX_PAGE: i64 = 200;
/// Most rank ranges in a prize table.
pub const MAX_PRIZES: usize = 100;
/// Most tiers in a league.
pub const MAX_TIERS: usize = 10;
/// The largest rating (and rating band) magnitude: a rating and a band add up within a
/// bigint, and a rating is exact in a double as a score is.
pub const MAX_RATING: i64 = (1 << 53) - 1;

/// A competition as declared, with its run now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Competition {
    /// Its board's id: scores go to `POST /v1/boards/{id}/scores`, reads to its reads.
    pub id: String,
    pub category: String,
    /// A one-off competition's window (RFC 3339, UTC): scores are taken from `starts_at` until
    /// (not at) `ends_at`. Absent on a recurring one, whose runs are its board's periods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
    /// A recurring competition's runs take scores this many seconds from their start (absent:
    /// the whole period).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<i32>,
    /// `upcoming`, `open` or `ended`, by the database clock (a recurring one is `open`).
    pub state: String,
    pub entry_required: bool,
    /// The most entrants of one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<i32>,
    /// The most entrants of one cohort (absent: no cohorts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort_size: Option<i32>,
    /// Entries with a rating join the open cohort nearest their rating within this band.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating_band: Option<i64>,
    /// A league's tiers, lowest first (empty: no tiers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<Tier>,
    /// The run entries go to now (a one-off competition's only run): its period id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// That run's entrants and cohorts so far.
    pub entrants: i32,
    pub cohorts: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<serde_json::Value>,
    pub prizes: Vec<Prize>,
}

impl Competition {
    /// The prize table that applies to a cohort of `tier`: the tier's own, else the
    /// competition's.
    pub fn prizes_of(&self, tier: i32) -> &[Prize] {
        usize::try_from(tier)
            .ok()
            .and_then(|t| self.tiers.get(t))
            .and_then(|t| t.prizes.as_deref())
            .unwrap_or(&self.prizes)
    }
}

/// What a range of ranks earns: a reward id and an amount, opaque to ledgerboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Prize {
    /// First and last rank of the range (1-based, inclusive).
    pub from: i64,
    pub to: i64,
    /// 1 to 64 characters.
    pub reward: String,
    #[serde(default)]
    pub amount: i64,
}

/// The prize of `rank` in `table`.
pub fn prize_for(table: &[Prize], rank: i64) -> Option<Prize> {
    table
        .iter()
        .find(|p| (p.from..=p.to).contains(&rank))
        .cloned()
}

/// One tier of a league: at each close, the first `promote` of every cohort of this tier move
/// up a tier (none from the top tier) and the last `relegate` move down (none from the lowest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tier {
    /// 1 to 32 characters, unique in the league.
    pub name: String,
    #[serde(default)]
    pub promote: i32,
    #[serde(default)]
    pub relegate: i32,
    /// This tier's prize table (absent: the competition's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prizes: Option<Vec<Prize>>,
}

/// A competition as an operator states it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declaration {
    pub category: Option<String>,
    /// A one-off competition's window: `ends_at` given, `starts_at` given or absent (the next
    /// whole second); both absent: a recurring competition.
    pub starts_at: Option<String>,
    pub ends_at: Option<String>,
    pub duration_s: Option<i32>,
    /// Default: true.
    pub entry_required: Option<bool>,
    pub max_size: Option<i32>,
    pub cohort_size: Option<i32>,
    pub rating_band: Option<i64>,
    pub tiers: Vec<Tier>,
    pub metadata: Option<serde_json::Value>,
    pub prizes: Vec<Prize>,
}

/// Why a competition was not declared, an entry not made or a run not closed. `code()` is the
/// api's.
#[derive(Debug, thiserror::Error)]
pub enum CompetitionError {
    #[error("{1}")]
    Invalid(&'static str, String),
    #[error("board {0} cannot hold this competition: {1}")]
    NotABoard(BoardId, &'static str),
    #[error("max_size may not go below the {0} entrants the run has")]
    BelowEntrants(i32),
    #[error(
        "the competition has entrants: its window, duration, cohorts, rating band and tiers stay as they are"
    )]
    Started,
    #[error("no such competition")]
    Unknown,
    #[error("the competition has not started")]
    NotStarted,
    #[error("the competition has ended")]
    Ended,
    #[error("the competition is full")]
    Full,
    #[error("the previous run is closing: its tiers place this entry; try again in a moment")]
    Closing,
    #[error("no such run of the competition")]
    UnknownRun,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<tokio_postgres::Error> for CompetitionError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(e.into())
    }
}

impl CompetitionError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(code, _) => code,
            Self::NotABoard(..) => "competition_board",
            Self::BelowEntrants(_) => "competition_below_entrants",
            Self::Started => "competition_started",
            Self::Unknown => "competition_unknown",
            Self::NotStarted => "competition_not_started",
            Self::Ended => "competition_ended",
            Self::Full => "competition_full",
            Self::Closing => "competition_closing",
            Self::UnknownRun => "competition_run_unknown",
            Self::Store(_) => "store",
        }
    }
}

/// Which competitions a page lists, by state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Upcoming,
    Open,
    Ended,
}

impl State {
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "upcoming" => Self::Upcoming,
            "open" => Self::Open,
            "ended" => Self::Ended,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Upcoming => "upcoming",
            Self::Open => "open",
            Self::Ended => "ended",
        }
    }
}

/// A player's entry into a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Entry {
    pub competition: String,
    pub user_id: String,
    /// The run (its period id).
    pub run: String,
    /// Its place in the run's order of entry (1: the first entrant).
    pub seat: i32,
    /// The player's tier in a league (0: the lowest), and its name.
    pub tier: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_name: Option<String>,
    /// The cohort it was placed in: read it with `cohort=` on the board's reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<i32>,
    pub entered_at: String,
    /// True when the player had entered this run before: this is that entry.
    pub duplicate: bool,
}
