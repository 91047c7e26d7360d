//! Attempts: a run of the game the server saw start. A player starts one on a board that
//! requires them ([`start`]); its score carries the attempt's id, and the score's transaction
//! uses it up (`mod.rs`, `sql/attempt_use.sql`). Single use, bound to the player, the board and
//! the period open at its start, and to its start time: a score sooner than the board's minimum
//! duration, later than its ttl, from another player, or with an attempt already used by
//! another score is refused with its own code, nothing written.

use tokio_postgres::types::Type;

use crate::board::definition::{AttemptRule, BoardDefinition, Definitions};
use crate::db::{Database, Op, Statement, StoreError};
use crate::model::{BoardId, UserId};

/// Parameters: new attempt id, board, user, request key, ttl s, max per period, min duration
/// ms, revision.
static START: Statement<8> = Statement::new(
    Op::Attempt,
    include_str!("../sql/attempt_start.sql"),
    [
        Type::UUID,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT4,
        Type::INT4,
        Type::INT4,
        Type::INT8,
    ],
);

/// Parameters: attempt id, event id, user, board.
pub(super) static USE: Statement<4> = Statement::new(
    Op::Attempt,
    include_str!("../sql/attempt_use.sql"),
    [Type::UUID, Type::UUID, Type::TEXT, Type::TEXT],
);

static SWEEP: Statement<0> =
    Statement::new(Op::Attempt, include_str!("../sql/attempt_sweep.sql"), []);

/// Deletes up to 5,000 attempts a day past their expiry; answers how many.
pub async fn sweep(db: &Database) -> Result<u64, StoreError> {
    db.execute(&SWEEP, []).await
}

/// Why a score's attempt was refused (api: its `code()`, and the status beside it). Nothing
/// was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttemptRefusal {
    #[error("attempt_id must be a UUID that POST /v1/boards/{{board}}/attempts answered")]
    Malformed,
    #[error("board {0} requires an attempt: start one with POST /v1/boards/{0}/attempts")]
    Required(BoardId),
    #[error("board {0} does not use attempts (its definition declares none)")]
    NotUsed(BoardId),
    #[error("no such attempt")]
    Unknown,
    #[error("the attempt belongs to another player or another board")]
    Foreign,
    #[error("the attempt was used by another score")]
    Used,
    #[error("the attempt expired, or the period it started in is over")]
    Expired,
    #[error("the attempt's minimum duration has not passed: {wait_ms} ms to go")]
    TooFast { wait_ms: i64 },
    #[error("the most attempts a player may start in this period were started")]
    Limit,
}

impl AttemptRefusal {
    /// The stable code the api answers.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Malformed => "invalid_attempt_id",
            Self::Required(_) => "attempt_required",
            Self::NotUsed(_) => "attempts_not_used",
            Self::Unknown => "attempt_unknown",
            Self::Foreign => "attempt_foreign",
            Self::Used => "attempt_used",
            Self::Expired => "attempt_expired",
            Self::TooFast { .. } => "attempt_too_fast",
            Self::Limit => "attempt_limit",
        }
    }

    /// The verdict of `sql/attempt_use.sql` or of a command's statement (`attempt_used`, …),
    /// when it refuses.
    pub fn of_verdict(verdict: &str, wait_ms: i64) -> Option<Self> {
        Some(match verdict.strip_prefix("attempt_").unwrap_or(verdict) {
            "unknown" => Self::Unknown,
            "foreign" => Self::Foreign,
            "used" => Self::Used,
            "expired" => Self::Expired,
            "too_fast" => Self::TooFast { wait_ms },
            _ => return None,
        })
    }
}

/// Why an attempt was not started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Refused(#[from] AttemptRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<tokio_postgres::Error> for StartError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(e.into())
    }
}

/// An attempt as started (for a repeat of its request: as it was started the first time).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attempt {
    /// What the score carries as `attempt_id`.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub attempt_id: String,
    pub board: String,
    pub user_id: String,
    /// The period the score must land in, on a board that resets (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// When it started and when it expires, by the database clock (RFC 3339, UTC).
    pub started_at: String,
    pub expires_at: String,
    /// The shortest run whose score is taken, in milliseconds from `started_at`.
    pub min_duration_ms: i32,
    /// True when the request key was used before: this is the attempt it started.
    pub duplicate: bool,
}

/// How often [`start`] runs its statement again after losing a race (the same request key at
/// once, the definition changed).
const MAX_TRIES: usize = 4;

/// Starts an attempt for `user` on `board`, once per `request_key` of the player on the board.
pub async fn start(
    definitions: &Definitions,
    db: &Database,
    board: &BoardId,
    user: &UserId,
    request_key: &uuid::Uuid,
) -> Result<Attempt, StartError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let definition = definitions.get(db, board).await?;
        let rule = rule(&definition)?;
        match start_once(db, &definition, &rule, user, request_key).await {
            Err(StartError::Store(StoreError::DefinitionChanged | StoreError::Contended(_)))
                if tries < MAX_TRIES =>
            {
                definitions.forget(board);
            }
            other => return other,
        }
    }
}

/// The board's attempt rule; a board without one does not use attempts.
fn rule(definition: &BoardDefinition) -> Result<AttemptRule, AttemptRefusal> {
    definition
        .attempts
        .clone()
        .ok_or_else(|| AttemptRefusal::NotUsed(definition.board.clone()))
}

async fn start_once(
    db: &Database,
    definition: &BoardDefinition,
    rule: &AttemptRule,
    user: &UserId,
    request_key: &uuid::Uuid,
) -> Result<Attempt, StartError> {
    let id = uuid::Uuid::new_v4();
    let key = request_key.to_string();
    // Bounded by the rule's checks (board/definition/rules.rs): a day in ms fits an i32.
    let min_duration = i32::try_from(rule.min_duration_ms)
        .map_err(|_| StoreError::Internal("min_duration_ms out of range".into()))?;
    let row = db
        .query_one(
            &START,
            [
                &id,
                &definition.board.as_str(),
                &user.as_str(),
                &key,
                &rule.ttl_s,
                &rule.max_per_period,
                &min_duration,
                &definition.revision,
            ],
        )
        .await?;
    let outcome: String = row.try_get("outcome")?;
    let duplicate = match outcome.as_str() {
        "created" => false,
        "repeat" => true,
        "limit" => return Err(AttemptRefusal::Limit.into()),
        "stale_definition" => return Err(StoreError::DefinitionChanged.into()),
        other => {
            return Err(
                StoreError::Internal(format!("unexpected attempt outcome {other:?}")).into(),
            );
        }
    };
    let attempt_id: uuid::Uuid = row.try_get("attempt_id")?;
    let period_board: String = row.try_get("period_board")?;
    Ok(Attempt {
        attempt_id: attempt_id.to_string(),
        board: definition.board.to_string(),
        user_id: user.to_string(),
        period: period_of(&period_board),
        started_at: row.try_get("started_at")?,
        expires_at: row.try_get("expires_at")?,
        min_duration_ms: row.try_get("min_duration_ms")?,
        duplicate,
    })
}

/// The period id of a board a command writes (`<board>~<period>`), None for a board that
/// never resets.
pub(super) fn period_of(written: &str) -> Option<String> {
    written.split_once('~').map(|(_, p)| p.to_owned())
}
