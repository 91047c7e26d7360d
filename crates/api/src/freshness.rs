//! A board's lag, measured at most once per `api.freshness_cache_ms` per board and shared by
//! every read of that board, so that stating freshness costs almost nothing per request; and
//! the `freshness` object every read answers with.
//!
//! The lag is per board: one board's backlog, retries or parked rows say nothing about another
//! board's projection, so they do not send its reads to PostgreSQL. Each measurement reads a
//! bounded number of index entries (`reads/freshness.sql`), whatever the backlog.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ledgerboard_core::db::reads::{Lag, lag};
use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::Seal;
use serde::Serialize;

/// How long one lag measurement may take. When it runs out the measurement is dropped, which
/// cancels its query on the server (`Database::bounded`), and the lag is unknown.
const MEASURE_TIMEOUT: Duration = Duration::from_millis(300);

/// Boards whose last measurement is kept; past this, expired entries are dropped, so a flood of
/// reads of distinct boards cannot grow the map without bound.
const MAX_BOARDS: usize = 10_000;

type Measurement = Option<(Instant, Option<Lag>)>;

/// One board's measurement: `last` is read by every read of the board under a plain lock held
/// for a copy; `measuring` is held across the one query that renews it, so concurrent reads of
/// a board whose measurement expired wait for that query rather than each run their own.
/// (Every read used to queue on one async lock per board even while the measurement was fresh:
/// at 64 clients on one board, the queue's wake-ups were a share of the api's CPU per read.)
#[derive(Default)]
struct Slot {
    last: Mutex<Measurement>,
    measuring: tokio::sync::Mutex<()>,
}

impl Slot {
    fn fresh(&self, ttl: Duration) -> Option<Option<Lag>> {
        let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.filter(|(at, _)| at.elapsed() < ttl)
            .map(|(_, lag)| lag)
    }
}

pub struct FreshnessCache {
    ttl: Duration,
    /// Per board: the last measurement, or the fact that it failed, and when.
    boards: Mutex<HashMap<BoardId, Arc<Slot>>>,
}

impl FreshnessCache {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            boards: Mutex::new(HashMap::new()),
        }
    }

    /// The board's fresh measurement, or its slot to measure it in.
    fn lookup(&self, board: &BoardId) -> Result<Option<Lag>, Arc<Slot>> {
        let mut boards = self.boards.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = boards.get(board) {
            return slot.fresh(self.ttl).ok_or_else(|| slot.clone());
        }
        if boards.len() >= MAX_BOARDS {
            let ttl = self.ttl;
            boards.retain(|_, slot| slot.fresh(ttl).is_some());
        }
        Err(boards.entry(board.clone()).or_default().clone())
    }

    /// The board's current lag, or None when PostgreSQL cannot say in time.
    pub async fn get(&self, db: &Database, board: &BoardId) -> Option<Lag> {
        let slot = match self.lookup(board) {
            Ok(lag) => return lag,
            Err(slot) => slot,
        };
        let _measuring = slot.measuring.lock().await;
        // Another read may have measured while this one waited.
        if let Some(lag) = slot.fresh(self.ttl) {
            return lag;
        }
        // Bounded well below the database timeouts: a hung PostgreSQL must not hold every
        // read of the board behind this lock; the lag is then stated as unknown.
        let value = match tokio::time::timeout(MEASURE_TIMEOUT, lag(db, board)).await {
            Ok(Ok(lag)) => Some(lag),
            Ok(Err(e)) => {
                log_unknown(&e);
                None
            }
            Err(_) => {
                tracing::warn!(timeout = ?MEASURE_TIMEOUT, board = %board, "projection lag unknown: the database did not answer in time");
                None
            }
        };
        *slot.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), value));
        value
    }
}

fn log_unknown(e: &StoreError) {
    tracing::warn!(error = %e, "projection lag unknown");
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Projection,
    Database,
}

/// Why an answer came from PostgreSQL rather than the projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// `consistency=strong`.
    Strong,
    /// The board's lag is over `api.max_lag_ms`.
    Lag,
    /// PostgreSQL could not state the lag in time: the projection may be any amount behind.
    LagUnknown,
    /// The projection does not hold the caller's `min_version` yet.
    MinVersion,
    /// Redis could not answer.
    RedisError,
    /// The board's projection has no seal: lost (Redis restarted empty, keys deleted or
    /// evicted) or never built; a rebuild is requested.
    ProjectionMissing,
    /// The board's seal counts other members than its keys hold; a rebuild is requested.
    ProjectionBroken,
    /// The period is archived (`reconciler.period_projection_retention_ms` after its close):
    /// PostgreSQL is its only source.
    PeriodArchived,
}

impl Reason {
    /// The `reason` label of `ledgerboard_read_fallbacks_total`.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Strong => "strong",
            Reason::Lag => "lag",
            Reason::LagUnknown => "lag_unknown",
            Reason::MinVersion => "min_version",
            Reason::RedisError => "redis_error",
            Reason::ProjectionMissing => "projection_missing",
            Reason::ProjectionBroken => "projection_broken",
            Reason::PeriodArchived => "period_archived",
        }
    }

    pub const ALL: [Reason; 8] = [
        Reason::Strong,
        Reason::Lag,
        Reason::LagUnknown,
        Reason::MinVersion,
        Reason::RedisError,
        Reason::ProjectionMissing,
        Reason::ProjectionBroken,
        Reason::PeriodArchived,
    ];
}

/// What the board's seal said, when the projection was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProjectionState {
    /// Sealed and whole.
    Whole,
    /// No seal (lost or never built).
    Missing,
    /// A seal that does not match the keys.
    Broken,
}

impl ProjectionState {
    /// The name the `freshness` object gives it (and the console shows).
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectionState::Whole => "whole",
            ProjectionState::Missing => "missing",
            ProjectionState::Broken => "broken",
        }
    }
}

impl From<Seal> for ProjectionState {
    fn from(seal: Seal) -> Self {
        match seal {
            Seal::Whole => ProjectionState::Whole,
            Seal::Missing => ProjectionState::Missing,
            Seal::Broken => ProjectionState::Broken,
        }
    }
}

/// The `freshness` object of every read. The lag numbers describe the board's projection; they
/// are null when PostgreSQL could not say in time.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct Freshness {
    pub source: Source,
    /// Why the answer came from PostgreSQL; null when it came from the projection.
    pub reason: Option<Reason>,
    /// The board's projection as the read found it; null when the projection was not read.
    pub projection: Option<ProjectionState>,
    pub projected_through: Option<i64>,
    /// The board's pending rows (retries included), counted up to 10,000.
    pub pending: Option<i64>,
    /// The board's parked rows, counted up to 10,000: their members may be stale in the
    /// projection until repaired or requeued.
    pub parked: Option<i64>,
    /// True when `pending` or `parked` reached 10,000: then they are lower bounds.
    pub capped: Option<bool>,
    /// Age of the board's oldest pending row.
    pub lag_ms: Option<i64>,
}

impl Freshness {
    pub fn new(
        source: Source,
        reason: Option<Reason>,
        projection: Option<ProjectionState>,
        lag: Option<Lag>,
    ) -> Self {
        Self {
            source,
            reason,
            projection,
            projected_through: lag.map(|l| l.projected_through),
            pending: lag.map(|l| l.pending),
            parked: lag.map(|l| l.parked),
            capped: lag.map(|l| l.capped()),
            lag_ms: lag.map(|l| l.lag_ms),
        }
    }
}
