//! Competitions (issue 39, its first part: tournaments). A competition is a declared board
//! that never resets, with a window (its scores are taken from `starts_at` until `ends_at`), an
//! optional cap on its entrants, whether a score needs an entry, a category, metadata and a
//! prize table (opaque to ledgerboard). Its scores, reads, projection and reconciliation are
//! its board's; the command statement admits a score only inside the window and, when entry is
//! required, only from an entrant (`board/sql/command/head.sql`'s `admission`). Entry is one
//! statement that decides the cap under the competition's row lock (`sql/enter.sql`).
//!
//! Still to come (issue 39): cohorts, leagues, attempts per run, the close into verifiable
//! standings with prizes, recurring runs.

use serde::{Deserialize, Serialize};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::board::definition::{Definitions, Reset};
use crate::db::{Database, Op, Statement, StoreError};
use crate::model::{BoardId, UserId};

/// Parameters: id, category, starts_at, ends_at, entry required, max size, metadata, prizes.
static DECLARE: Statement<8> = Statement::new(
    Op::Competition,
    include_str!("sql/declare.sql"),
    [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::BOOL,
        Type::INT4,
        Type::TEXT,
        Type::TEXT,
    ],
);
static GET: Statement<1> =
    Statement::new(Op::Competition, include_str!("sql/get.sql"), [Type::TEXT]);
/// Parameters: category, state, after, limit.
static LIST: Statement<4> = Statement::new(
    Op::Competition,
    include_str!("sql/list.sql"),
    [Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8],
);
/// Parameters: competition, user.
static ENTER: Statement<2> = Statement::new(
    Op::Competition,
    include_str!("sql/enter.sql"),
    [Type::TEXT, Type::TEXT],
);

/// Most competitions on one page.
pub const MAX_PAGE: i64 = 200;
/// Most rank ranges in a prize table.
pub const MAX_PRIZES: usize = 100;

/// A competition as declared, with its entrants and its state now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Competition {
    /// Its board's id: scores go to `POST /v1/boards/{id}/scores`, reads to its reads.
    pub id: String,
    pub category: String,
    /// RFC 3339, UTC: scores are taken from `starts_at` until (not at) `ends_at`.
    pub starts_at: String,
    pub ends_at: String,
    /// `upcoming`, `open` or `ended`, by the database clock.
    pub state: String,
    pub entry_required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<i32>,
    pub entrants: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<serde_json::Value>,
    pub prizes: Vec<Prize>,
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

/// A competition as an operator states it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declaration {
    pub category: Option<String>,
    pub starts_at: String,
    pub ends_at: String,
    /// Default: true.
    pub entry_required: Option<bool>,
    pub max_size: Option<i32>,
    pub metadata: Option<serde_json::Value>,
    pub prizes: Vec<Prize>,
}

/// Why a competition was not declared, or an entry not made. `code()` is the api's.
#[derive(Debug, thiserror::Error)]
pub enum CompetitionError {
    #[error("{1}")]
    Invalid(&'static str, String),
    #[error(
        "board {0} is not a declared board that never resets: declare it (PUT /v1/boards/{0}) with reset never first"
    )]
    NotABoard(BoardId),
    #[error("max_size may not go below the {0} entrants the competition has")]
    BelowEntrants(i32),
    #[error("no such competition")]
    Unknown,
    #[error("the competition has not started")]
    NotStarted,
    #[error("the competition has ended")]
    Ended,
    #[error("the competition is full")]
    Full,
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
            Self::NotABoard(_) => "competition_board",
            Self::BelowEntrants(_) => "competition_below_entrants",
            Self::Unknown => "competition_unknown",
            Self::NotStarted => "competition_not_started",
            Self::Ended => "competition_ended",
            Self::Full => "competition_full",
            Self::Store(_) => "store",
        }
    }
}

impl Declaration {
    /// Checks what a row cannot: the window's times and order, the cap, the category, the
    /// metadata's size and the prize table's ranges (ascending, not overlapping).
    fn check(&self) -> Result<(), CompetitionError> {
        let invalid = |code, m: &str| Err(CompetitionError::Invalid(code, m.to_owned()));
        let time = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
        let (Some(start), Some(end)) = (time(&self.starts_at), time(&self.ends_at)) else {
            return invalid(
                "invalid_window",
                "starts_at and ends_at must be RFC 3339 times (2026-12-07T18:00:00Z)",
            );
        };
        if end <= start {
            return invalid("invalid_window", "ends_at must be after starts_at");
        }
        if self.max_size.is_some_and(|n| n < 1) {
            return invalid("invalid_max_size", "max_size must be at least 1");
        }
        let category = self.category.as_deref().unwrap_or_default();
        if category.chars().count() > 64 || category.chars().any(char::is_control) {
            return invalid(
                "invalid_category",
                "category must be at most 64 characters without control characters",
            );
        }
        // jsonb holds no \u0000: refused here as the metadata's error, not the store's.
        let fits = |m: &serde_json::Value| {
            let text = m.to_string();
            m.is_object() && text.len() <= 4096 && !text.contains("\\u0000")
        };
        if !self.metadata.as_ref().is_none_or(fits) {
            return invalid(
                "invalid_metadata",
                "metadata must be a JSON object of at most 4096 bytes, without \\u0000",
            );
        }
        let mut last = 0;
        for p in &self.prizes {
            let reward_ok = (1..=64).contains(&p.reward.chars().count())
                && !p.reward.chars().any(char::is_control);
            if p.from <= last || p.to < p.from || !reward_ok || p.amount < 0 {
                return invalid(
                    "invalid_prizes",
                    "prizes must be rank ranges {from, to, reward, amount} in ascending order, not overlapping, from 1, each reward 1 to 64 characters, amounts not negative",
                );
            }
            last = p.to;
        }
        if self.prizes.len() > MAX_PRIZES {
            return invalid("invalid_prizes", "at most 100 prize ranges");
        }
        Ok(())
    }
}

/// Declares the competition `id` (its board must be declared and never reset), or changes it;
/// answers it and whether it was created.
pub async fn declare(
    db: &Database,
    definitions: &Definitions,
    id: &BoardId,
    declaration: &Declaration,
) -> Result<(Competition, bool), CompetitionError> {
    declaration.check()?;
    let definition = definitions.get(db, id).await?;
    if !definition.declared || definition.reset != Reset::Never || id.period().is_some() {
        return Err(CompetitionError::NotABoard(id.clone()));
    }
    let metadata = declaration.metadata.as_ref().map(|m| m.to_string());
    let prizes = serde_json::to_string(&declaration.prizes)
        .map_err(|e| StoreError::Internal(format!("prizes: {e}")))?;
    let category = declaration.category.clone().unwrap_or_default();
    let row = db
        .query_opt(
            &DECLARE,
            [
                &id.as_str(),
                &category,
                &declaration.starts_at,
                &declaration.ends_at,
                &declaration.entry_required.unwrap_or(true),
                &declaration.max_size,
                &metadata,
                &prizes,
            ],
        )
        .await?;
    let created = match row {
        Some(row) => row.try_get::<_, bool>("created")?,
        None => {
            let now = get(db, id).await?.ok_or(CompetitionError::Unknown)?;
            return Err(CompetitionError::BelowEntrants(now.entrants));
        }
    };
    let competition = get(db, id).await?.ok_or(CompetitionError::Unknown)?;
    Ok((competition, created))
}

fn of_row(row: &Row) -> Result<Competition, StoreError> {
    let json = |name: &str| -> Result<Option<serde_json::Value>, StoreError> {
        row.try_get::<_, Option<String>>(name)?
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|e| StoreError::Internal(format!("competition {name}: {e}")))
    };
    let prizes = match json("prizes")? {
        Some(p) => serde_json::from_value(p)
            .map_err(|e| StoreError::Internal(format!("competition prizes: {e}")))?,
        None => Vec::new(),
    };
    Ok(Competition {
        id: row.try_get("competition_id")?,
        category: row.try_get("category")?,
        starts_at: row.try_get("starts_at")?,
        ends_at: row.try_get("ends_at")?,
        state: row.try_get("state")?,
        entry_required: row.try_get("entry_required")?,
        max_size: row.try_get("max_size")?,
        entrants: row.try_get("entrants")?,
        metadata: json("metadata")?,
        prizes,
    })
}

/// The competition `id`, if declared.
pub async fn get(db: &Database, id: &BoardId) -> Result<Option<Competition>, StoreError> {
    db.query_opt(&GET, [&id.as_str()])
        .await?
        .as_ref()
        .map(of_row)
        .transpose()
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

/// A page of competitions in id order, after `after`, of `category` and `state` (None: all).
pub async fn list(
    db: &Database,
    category: Option<&str>,
    state: Option<State>,
    after: Option<&BoardId>,
    limit: i64,
) -> Result<Vec<Competition>, StoreError> {
    let rows = db
        .query(
            &LIST,
            [
                &category,
                &state.map(State::as_str),
                &after.map_or("", BoardId::as_str),
                &limit.clamp(1, MAX_PAGE),
            ],
        )
        .await?;
    rows.iter().map(of_row).collect()
}

/// A player's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Entry {
    pub competition: String,
    pub user_id: String,
    /// Its place in the order of entry (1: the first entrant).
    pub seat: i32,
    pub entered_at: String,
    /// True when the player had entered before: this is that entry.
    pub duplicate: bool,
}

/// How often [`enter`] runs its statement again after losing a race (the same new player at
/// once).
const MAX_TRIES: usize = 4;

/// Enters `user` into the competition `id`: once (a repeat answers the first entry), only in its
/// window, never past its cap.
pub async fn enter(db: &Database, id: &BoardId, user: &UserId) -> Result<Entry, CompetitionError> {
    let mut tries = 0;
    let row = loop {
        tries += 1;
        match db.query_one(&ENTER, [&id.as_str(), &user.as_str()]).await {
            Err(StoreError::Contended(_)) if tries < MAX_TRIES => {}
            other => break other?,
        }
    };
    let outcome: String = row.try_get("outcome")?;
    let duplicate = match outcome.as_str() {
        "entered" => false,
        "repeat" => true,
        "unknown" => return Err(CompetitionError::Unknown),
        "not_started" => return Err(CompetitionError::NotStarted),
        "ended" => return Err(CompetitionError::Ended),
        "full" => return Err(CompetitionError::Full),
        other => {
            return Err(StoreError::Internal(format!("unexpected entry outcome {other:?}")).into());
        }
    };
    Ok(Entry {
        competition: id.to_string(),
        user_id: user.to_string(),
        seat: row.try_get("seat")?,
        entered_at: row.try_get("entered_at")?,
        duplicate,
    })
}

/// One place of a competition's results: the entry, ranked, and what its rank earns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Placed {
    #[serde(flatten)]
    pub entry: crate::model::RankedEntry,
    /// The prize range the rank falls in; absent when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prize: Option<Prize>,
}

/// A page of a competition's results, read from PostgreSQL.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Results {
    pub competition: Competition,
    /// True once the competition has ended: no score can change the standings any more
    /// (moderation still can: a ban or a removal closes the ranks up).
    #[serde(rename = "final")]
    pub is_final: bool,
    /// Visible entries of its board.
    pub total: u64,
    pub entries: Vec<Placed>,
}

/// A page of the competition `id`'s standings from PostgreSQL (the source payouts read), each
/// entry with the prize its rank earns in `mode`.
pub async fn results(
    db: &Database,
    definitions: &Definitions,
    id: &BoardId,
    mode: crate::ranking::RankMode,
    offset: u64,
    limit: u64,
) -> Result<Results, CompetitionError> {
    let competition = get(db, id).await?.ok_or(CompetitionError::Unknown)?;
    let definition = definitions.get(db, id).await?;
    let page = crate::db::reads::top(db, id, definition.order(), mode, offset, limit).await?;
    let prize = |rank: u64| {
        let rank = i64::try_from(rank).unwrap_or(i64::MAX);
        competition
            .prizes
            .iter()
            .find(|p| (p.from..=p.to).contains(&rank))
            .cloned()
    };
    Ok(Results {
        is_final: competition.state == "ended",
        total: page.total,
        entries: page
            .entries
            .into_iter()
            .map(|entry| Placed {
                prize: prize(entry.rank),
                entry,
            })
            .collect(),
        competition,
    })
}
