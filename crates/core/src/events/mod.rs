//! Events out (issue 40): the event log in PostgreSQL (migration V20) and what reads it.
//!
//! What happens is written to `event_queue` in the transaction that makes it happen (the score
//! command's statement, `board/sql/command/tail.sql`; a period's or a run's close; moderation
//! and review decisions; the projector's `rank.top_changed`). The sequencer
//! ([`sequence::sequence`]) moves committed rows into `events`, each with the next position, so
//! that a reader paging by position never misses a row that commits late. The feed
//! ([`feed::page`]), the webhook dispatcher and the tests read `events`; every reader renders
//! a row the same way ([`render`]), so an event is the same JSON wherever it is read.

pub mod feed;
pub mod render;
pub mod sequence;
pub mod top;

use serde::Serialize;

use crate::db::StoreError;

/// What an event reports; its name is the `kind` a subscription or the feed filters by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A score command was recorded (improving or not): the member's tuple before and after.
    ScoreAccepted,
    /// A board's first N changed (coalesced per projected batch).
    TopChanged,
    /// A period closed: its first N standings, its digest.
    PeriodClosed,
    /// A competition's run closed: first N standings, prizes, moves, digest.
    CompetitionClosed,
    /// Moderation: an entry removed, a user banned, unbanned or erased.
    ModerationRemoved,
    ModerationBanned,
    ModerationUnbanned,
    ModerationErased,
    /// A score held for review, approved or rejected.
    ReviewHeld,
    ReviewApproved,
    ReviewRejected,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::ScoreAccepted,
        Kind::TopChanged,
        Kind::PeriodClosed,
        Kind::CompetitionClosed,
        Kind::ModerationRemoved,
        Kind::ModerationBanned,
        Kind::ModerationUnbanned,
        Kind::ModerationErased,
        Kind::ReviewHeld,
        Kind::ReviewApproved,
        Kind::ReviewRejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ScoreAccepted => "score.accepted",
            Kind::TopChanged => "rank.top_changed",
            Kind::PeriodClosed => "period.closed",
            Kind::CompetitionClosed => "competition.closed",
            Kind::ModerationRemoved => "moderation.removed",
            Kind::ModerationBanned => "moderation.banned",
            Kind::ModerationUnbanned => "moderation.unbanned",
            Kind::ModerationErased => "moderation.erased",
            Kind::ReviewHeld => "review.held",
            Kind::ReviewApproved => "review.approved",
            Kind::ReviewRejected => "review.rejected",
        }
    }

    pub fn parse(raw: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == raw)
    }
}

/// A list of kinds as a filter sends them: comma-separated names, each known.
pub fn parse_kinds(raw: &str) -> Result<Vec<Kind>, EventsError> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| Kind::parse(s).ok_or_else(|| EventsError::UnknownKind(s.to_string())))
        .collect()
}

/// One event as every reader shows it (the feed's items, a webhook's body).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Event {
    /// Stable: the same event read twice, from the feed or a webhook, has the same id
    /// (a score's is its command's event id). Receivers deduplicate by it.
    pub id: uuid::Uuid,
    /// Its place in the log: increasing, the feed's cursor (`after=`).
    pub position: i64,
    pub kind: String,
    /// The declared board.
    pub board: String,
    /// The period the change happened in, on a board that resets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// The cohort, on a competition with cohorts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// RFC 3339, UTC, microseconds.
    pub occurred_at: String,
    /// What happened, by kind ([`render`]).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub data: serde_json::Value,
    /// The trace context of the request that caused it (W3C `traceparent`), when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error(
        "unknown event kind {0:?}; known: score.accepted, rank.top_changed, period.closed, competition.closed, moderation.removed, moderation.banned, moderation.unbanned, moderation.erased, review.held, review.approved, review.rejected"
    )]
    UnknownKind(String),
    /// The cursor is before what retention kept: events after it are gone.
    #[error(
        "events after position {after} were deleted by retention (kept: after {swept_through}); start again from the feed's head or a newer cursor"
    )]
    CursorExpired { after: i64, swept_through: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<tokio_postgres::Error> for EventsError {
    fn from(e: tokio_postgres::Error) -> Self {
        EventsError::Store(StoreError::from(e))
    }
}
