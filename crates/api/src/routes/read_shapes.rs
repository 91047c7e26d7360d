//! The reads' query parameters and answers (`reads.rs` handles them).

use ledgerboard_core::model::RankedEntry;
use ledgerboard_core::ranking::{Cursor, RankMode};
use serde::{Deserialize, Serialize};

use super::reads::Consistency;
use crate::freshness::Freshness;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TopQuery {
    /// 1 to 1000 (default 10).
    #[param(minimum = 1, maximum = 1000)]
    pub(super) limit: Option<u64>,
    /// 0 to 10,000,000 (default 0). Not with `after`.
    #[param(minimum = 0, maximum = 10_000_000)]
    pub(super) offset: Option<u64>,
    /// The `next` cursor of the previous page: this page starts just after its last entry.
    /// Not with `offset`.
    #[param(max_length = 424, pattern = "^[0-9a-f]+$")]
    pub(super) after: Option<String>,
    #[serde(default)]
    #[param(inline)]
    pub(super) rank_mode: RankMode,
    #[serde(default)]
    #[param(inline)]
    pub(super) consistency: Consistency,
    /// `current` (default), `previous`, or a period id (`YYYYMMDDTHHMMSSZ`, its start in UTC)
    /// of a board declared with a `reset`; a board that never resets takes none.
    #[param(max_length = 16, pattern = "^(current|previous|[0-9]{8}T[0-9]{6}Z)$")]
    pub(super) period: Option<String>,
    /// One cohort of a competition's run (the `cohort` its entry answered): 1 to 999999.
    #[param(minimum = 1, maximum = 999_999)]
    pub(super) cohort: Option<u32>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    #[serde(default)]
    #[param(inline)]
    pub(super) rank_mode: RankMode,
    #[serde(default)]
    #[param(inline)]
    pub(super) consistency: Consistency,
    /// Read-your-writes: the version the caller's own last command produced.
    pub(super) min_version: Option<i64>,
    /// `current` (default), `previous`, or a period id (`YYYYMMDDTHHMMSSZ`, its start in UTC)
    /// of a board declared with a `reset`; a board that never resets takes none.
    #[param(max_length = 16, pattern = "^(current|previous|[0-9]{8}T[0-9]{6}Z)$")]
    pub(super) period: Option<String>,
    /// One cohort of a competition's run (the `cohort` its entry answered): 1 to 999999.
    #[param(minimum = 1, maximum = 999_999)]
    pub(super) cohort: Option<u32>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AroundQuery {
    /// 0 to 100 (default 5): members on each side of the user.
    #[param(minimum = 0, maximum = 100)]
    pub(super) radius: Option<u64>,
    #[serde(default)]
    #[param(inline)]
    pub(super) rank_mode: RankMode,
    #[serde(default)]
    #[param(inline)]
    pub(super) consistency: Consistency,
    /// `current` (default), `previous`, or a period id (`YYYYMMDDTHHMMSSZ`, its start in UTC)
    /// of a board declared with a `reset`; a board that never resets takes none.
    #[param(max_length = 16, pattern = "^(current|previous|[0-9]{8}T[0-9]{6}Z)$")]
    pub(super) period: Option<String>,
    /// One cohort of a competition's run (the `cohort` its entry answered): 1 to 999999.
    #[param(minimum = 1, maximum = 999_999)]
    pub(super) cohort: Option<u32>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsersQuery {
    /// 1 to 100 distinct user ids, separated by commas (so an id with a comma cannot be
    /// asked for here; read it with `users/{user_id}`).
    pub(super) ids: String,
    #[serde(default)]
    #[param(inline)]
    pub(super) rank_mode: RankMode,
    #[serde(default)]
    #[param(inline)]
    pub(super) consistency: Consistency,
    /// `current` (default), `previous`, or a period id (`YYYYMMDDTHHMMSSZ`, its start in UTC)
    /// of a board declared with a `reset`; a board that never resets takes none.
    #[param(max_length = 16, pattern = "^(current|previous|[0-9]{8}T[0-9]{6}Z)$")]
    pub(super) period: Option<String>,
    /// One cohort of a competition's run (the `cohort` its entry answered): 1 to 999999.
    #[param(minimum = 1, maximum = 999_999)]
    pub(super) cohort: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Page {
    /// In rank order; ranks in the read's `rank_mode`.
    pub(super) entries: Vec<RankedEntry>,
    /// Entries on the board.
    pub(super) total: u64,
    /// Pass as `after` for the next page; absent when this page is shorter than `limit`
    /// (and on `around`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) next: Option<String>,
    /// The period read, on a board that resets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) period: Option<String>,
    /// The cohort read, of a competition's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cohort: Option<u32>,
    pub(super) freshness: Freshness,
}

impl Page {
    /// Owned, so that an answer of its own (`around`) moves its entries into the JSON answer
    /// instead of copying each one; a coalesced page shared with other readers is copied by
    /// its caller (`Arc::unwrap_or_clone`).
    pub(super) fn new(
        page: ledgerboard_core::ranking::Page,
        period: Option<String>,
        cohort: Option<u32>,
        freshness: Freshness,
    ) -> Self {
        Self {
            entries: page.entries,
            total: page.total,
            next: page.next.as_ref().map(Cursor::encode),
            period,
            cohort,
            freshness,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Member {
    pub(super) user_id: String,
    /// The score (on a board with columns, its first column).
    pub(super) score: i64,
    /// On a board with columns: the value in each column, in the definition's order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) scores: Option<Vec<i64>>,
    pub(super) version: i64,
    /// In the read's `rank_mode`.
    pub(super) rank: u64,
    pub(super) percentile: f64,
    /// Entries on the board.
    pub(super) total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(super) metadata: Option<serde_json::Value>,
    /// The period read, on a board that resets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) period: Option<String>,
    /// The cohort read, of a competition's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cohort: Option<u32>,
    pub(super) freshness: Freshness,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Users {
    /// The ids on the board, in rank order.
    pub(super) entries: Vec<RankedEntry>,
    /// The ids not on the board, in the order asked.
    pub(super) missing: Vec<String>,
    /// Entries on the board.
    pub(super) total: u64,
    /// The period read, on a board that resets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) period: Option<String>,
    /// The cohort read, of a competition's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cohort: Option<u32>,
    pub(super) freshness: Freshness,
}
