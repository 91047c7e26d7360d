//! Review: a score past one of its board's review rules (a ceiling per column, a jump from the
//! player's entry, a rate per minute) is held instead of applied. It is recorded in
//! `held_scores` (migration V16) and nowhere else, so no read path, projection or rebuild can
//! show it; its sender is answered as though it was applied. An operator approves it (applied
//! then, as the command it was: its event id, its fields, the ordinary statement) or rejects it
//! (kept, hidden, with the reason). The held row records the decision: who, when, why.
//!
//! The event log (core `events/`) reports each step once: `review.held` with the hold
//! (`sql/review_hold.sql`), `review.rejected` with the rejection (`sql/review_decide.sql`), and
//! `review.approved` once the approved score is applied (`sql/review_approved.sql`; the
//! decision alone may still be undone, see [`approve`]).

use tokio_postgres::types::Type;

use super::super::command::{Fields, ScoreCommand, Writer};
use super::super::definition::{BoardDefinition, Definitions, ReviewRules};
use super::super::group::CommandGroups;
use super::super::operator::Tally;
use super::super::submit::{SubmitError, submit};
use crate::db::{Database, Op, Statement, StoreError};
use crate::model::{BoardId, CommandOutcome, EventId, Submitted};

/// Parameters: event id.
pub(super) static LOCK: Statement<1> = Statement::new(
    Op::Review,
    include_str!("../sql/review_lock.sql"),
    [Type::TEXT],
);
/// Parameters: event id.
pub(super) static HELD: Statement<1> = Statement::new(
    Op::Review,
    include_str!("../sql/review_held.sql"),
    [Type::UUID],
);
/// Parameters: board, user, event id, count the minute.
pub(super) static JUDGE: Statement<4> = Statement::new(
    Op::Review,
    include_str!("../sql/review_judge.sql"),
    [Type::TEXT, Type::TEXT, Type::UUID, Type::BOOL],
);
/// Parameters: event id, board, period board, user, fields, attempt, rule, detail, answer,
/// revision.
pub(super) static HOLD: Statement<10> = Statement::new(
    Op::Review,
    include_str!("../sql/review_hold.sql"),
    [
        Type::UUID,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::UUID,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
    ],
);
/// Parameters: state, after held_at, after event id, page size, board.
static LIST: Statement<5> = Statement::new(
    Op::Review,
    include_str!("../sql/review_list.sql"),
    [Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8, Type::TEXT],
);
/// Parameters: event id, state, actor, reason.
static DECIDE: Statement<4> = Statement::new(
    Op::Review,
    include_str!("../sql/review_decide.sql"),
    [Type::UUID, Type::TEXT, Type::TEXT, Type::TEXT],
);
/// Parameters: event id.
static UNDO: Statement<1> = Statement::new(
    Op::Review,
    include_str!("../sql/review_undo.sql"),
    [Type::UUID],
);
/// Parameters: event id.
static APPROVED: Statement<1> = Statement::new(
    Op::Review,
    include_str!("../sql/review_approved.sql"),
    [Type::UUID],
);
/// Parameters: board.
static PERIOD: Statement<1> = Statement::new(
    Op::Review,
    include_str!("../sql/review_period.sql"),
    [Type::TEXT],
);
static PENDING: Statement<0> =
    Statement::new(Op::Review, include_str!("../sql/review_pending.sql"), []);

/// The rule a held score broke, and how (kept with it, shown to the operator, never to the
/// player).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub rule: &'static str,
    pub detail: String,
}

/// Judges a command by `rules`: the tally it would make from the player's standing one
/// (`standing`, None: no entry yet) and its number in the current minute. Ceiling and jump judge
/// only a command that changes the entry (a best submission that does not improve it changes
/// nothing to hold); the rate judges every command.
pub(super) fn judge(
    rules: &ReviewRules,
    definition: &BoardDefinition,
    cmd: &ScoreCommand,
    standing: Option<Tally>,
    this_minute: Option<i32>,
) -> (Tally, Option<Broken>) {
    let order = definition.order();
    let next = cmd.operator.fold(order, standing, (cmd.value, cmd.rest));
    let changed = standing.is_none_or(|s| (s.score, s.rest) != (next.score, next.rest))
        || cmd.operator != super::super::operator::Operator::Best;
    if let (Some(limit), Some(n)) = (rules.max_per_minute, this_minute)
        && n > limit
    {
        let detail = format!("command {n} of the player this minute, past {limit}");
        return (
            next,
            Some(Broken {
                rule: "rate",
                detail,
            }),
        );
    }
    if !changed {
        return (next, None);
    }
    let values = cmd.columns.values(next.score, next.rest);
    for (i, ceiling) in rules.ceiling.iter().enumerate() {
        let (Some(ceiling), Some(&value)) = (ceiling, values.get(i)) else {
            continue;
        };
        let sort = match i {
            0 => definition.sort,
            _ => definition
                .columns
                .get(i)
                .map_or(definition.sort, |c| c.order),
        };
        if sort.ahead(value, *ceiling) {
            let name = definition
                .columns
                .get(i)
                .map_or("score".to_owned(), |c| c.name.clone());
            let detail = format!("{name} {value} beyond the ceiling {ceiling}");
            return (
                next,
                Some(Broken {
                    rule: "ceiling",
                    detail,
                }),
            );
        }
    }
    if let (Some(limit), Some(s)) = (rules.max_jump, standing) {
        let jump = next.score.abs_diff(s.score);
        if jump > limit.unsigned_abs() {
            let detail = format!(
                "from {} to {}: a jump of {jump}, past {limit}",
                s.score, next.score
            );
            return (
                next,
                Some(Broken {
                    rule: "jump",
                    detail,
                }),
            );
        }
    }
    (next, None)
}

/// The fields of a command as they are kept with a held score, to apply it on approval and to
/// tell a repeat from a reuse of its event id.
pub(super) fn stored_fields(fields: &Fields<'_>) -> serde_json::Value {
    serde_json::json!({
        "score": fields.score,
        "delta": fields.delta,
        "metadata": fields.metadata,
    })
}

/// A held score as the review queue shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Held {
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub event_id: String,
    pub board: String,
    /// The period it would have landed in, on a board that resets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    pub user_id: String,
    /// The command's `score` or `delta`, and `metadata`, as sent.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub fields: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// `ceiling`, `jump` or `rate`.
    pub rule: String,
    pub detail: String,
    /// `pending`, `approved` or `rejected`.
    pub state: String,
    pub held_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Most held scores on one page of the queue.
pub const MAX_PAGE: i64 = 200;

/// Which held scores a page lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Pending,
    Approved,
    Rejected,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        }
    }
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            _ => return None,
        })
    }
}

/// A page of held scores in `state`, oldest first, after `after` (the previous page's last
/// `held_at` and event id), of `board` or of every board.
pub async fn list(
    db: &Database,
    state: State,
    after: Option<(&str, &str)>,
    limit: i64,
    board: Option<&BoardId>,
) -> Result<Vec<Held>, StoreError> {
    let (at, id) = after.unzip();
    let rows = db
        .query(
            &LIST,
            [
                &state.as_str(),
                &at,
                &id,
                &limit.clamp(1, MAX_PAGE),
                &board.map(BoardId::as_str),
            ],
        )
        .await?;
    rows.iter().map(held_of).collect()
}

fn held_of(row: &tokio_postgres::Row) -> Result<Held, StoreError> {
    let fields: String = row.try_get("fields")?;
    let period_board: String = row.try_get("period_board")?;
    Ok(Held {
        event_id: row.try_get::<_, uuid::Uuid>("event_id")?.to_string(),
        board: row.try_get("board_id")?,
        period: super::attempt::period_of(&period_board),
        user_id: row.try_get("user_id")?,
        fields: serde_json::from_str(&fields)
            .map_err(|e| StoreError::Internal(format!("held fields: {e}")))?,
        attempt_id: row
            .try_get::<_, Option<uuid::Uuid>>("attempt_id")?
            .map(|a| a.to_string()),
        rule: row.try_get("rule")?,
        detail: row.try_get("detail")?,
        state: row.try_get("state")?,
        held_at: row.try_get("held_at")?,
        decided_at: row.try_get("decided_at")?,
        decided_by: row.try_get("decided_by")?,
        reason: row.try_get("reason")?,
    })
}

/// How many held scores wait for review (capped at a million).
pub async fn pending(db: &Database) -> Result<i64, StoreError> {
    Ok(db.query_one(&PENDING, []).await?.try_get("pending")?)
}

/// Why a decision was not taken.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("no held score has event id {0}")]
    Unknown(EventId),
    #[error("the held score {0} was {1} already")]
    Decided(EventId, String),
    /// Approval only: the period it was held in is over; its standings are frozen.
    #[error("the period the score was held in is over: its standings stay as they are")]
    PeriodOver,
    #[error("the reason must be 1 to 512 characters, none of them a control character")]
    Reason,
    /// Approval only: its score was refused now (its board's definition changed under it).
    #[error(transparent)]
    Submit(#[from] SubmitError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<tokio_postgres::Error> for DecideError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(e.into())
    }
}

/// What a decision did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Decided {
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub event_id: String,
    /// `approved` or `rejected`.
    pub state: String,
    /// Approval: the score applied, as a command's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CommandOutcome>,
}

/// Rejects a pending held score: it stays hidden, with `reason`, decided by `actor`.
pub async fn reject(
    db: &Database,
    event: &EventId,
    actor: &str,
    reason: &str,
) -> Result<Decided, DecideError> {
    decide(db, event, "rejected", actor, reason).await?;
    Ok(Decided {
        event_id: event.to_string(),
        state: "rejected".into(),
        outcome: None,
    })
}

/// Approves a held score: applies it as the command it was (its event id and fields, under its
/// board's definition now), then records the decision. An approval whose score is refused goes
/// back to the queue. Approving an approved one again applies nothing new (its event id was
/// applied) and answers its outcome.
pub async fn approve(
    groups: &CommandGroups,
    definitions: &Definitions,
    db: &Database,
    event: &EventId,
    actor: &str,
    reason: &str,
) -> Result<Decided, DecideError> {
    let row = decide(db, event, "approved", actor, reason).await?;
    let board: String = row.try_get("board_id")?;
    let period_board: String = row.try_get("period_board")?;
    let user: String = row.try_get("user_id")?;
    let fields: String = row.try_get("fields")?;
    let result = async {
        let board = BoardId::parse_stored(&board)
            .map_err(|_| StoreError::Internal(format!("held board {board:?}")))?;
        let now: String = db
            .query_one(&PERIOD, [&board.as_str()])
            .await?
            .try_get("period_board")?;
        if now != period_board {
            return Err(DecideError::PeriodOver);
        }
        let fields: StoredFields = serde_json::from_str(&fields)
            .map_err(|e| StoreError::Internal(format!("held fields: {e}")))?;
        let event_text = event.to_string();
        let command = Fields {
            event_id: &event_text,
            user_id: &user,
            score: fields.score.as_ref(),
            delta: fields.delta.as_ref(),
            metadata: fields.metadata.as_ref(),
            writer: Writer::Review,
            attempt: None,
        };
        Ok(submit(groups, definitions, db, &board, &command, None).await?)
    }
    .await;
    match result {
        Ok(outcome) => {
            // The approval's event, now that its score is in (once: a repeat writes nothing).
            // Should this fail, the approval stands and answers the error: approving again
            // (an approved score may be) writes it.
            db.execute(&APPROVED, [&event.as_uuid()]).await?;
            Ok(Decided {
                event_id: event.to_string(),
                state: "approved".into(),
                outcome: Some(outcome),
            })
        }
        Err(e) => {
            db.execute(&UNDO, [&event.as_uuid()]).await?;
            Err(e)
        }
    }
}

#[derive(serde::Deserialize)]
struct StoredFields {
    score: Option<Submitted>,
    delta: Option<Submitted>,
    metadata: Option<serde_json::Value>,
}

async fn decide(
    db: &Database,
    event: &EventId,
    state: &str,
    actor: &str,
    reason: &str,
) -> Result<tokio_postgres::Row, DecideError> {
    // PostgreSQL's text holds no NUL, and a reason is read by people: no control characters.
    let chars = reason.trim().chars().count();
    if chars == 0 || reason.chars().count() > 512 || reason.chars().any(char::is_control) {
        return Err(DecideError::Reason);
    }
    let row = db
        .query_opt(&DECIDE, [&event.as_uuid(), &state, &actor, &reason])
        .await?
        .ok_or(DecideError::Unknown(*event))?;
    if !row.try_get::<_, bool>("decided")? {
        return Err(DecideError::Decided(*event, row.try_get("state")?));
    }
    Ok(row)
}
