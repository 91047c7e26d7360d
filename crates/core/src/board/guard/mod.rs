//! Guarded score commands (issue 38): a command to a board that requires attempts or reviews
//! scores runs in a transaction of its own, not in a command group, since more than its own
//! statement decides it:
//!
//! 1. one event id at a time (`sql/review_lock.sql`), and a repeat of a held command is told
//!    what it was told the first time (`sql/review_held.sql`);
//! 2. its attempt is used (`attempt.rs`, `sql/attempt_use.sql`): refused, nothing is written;
//! 3. its review rules are judged on the player's standing entry (`review.rs`): one broken
//!    holds the score (`sql/review_hold.sql`) and answers it as applied;
//! 4. otherwise its statements run (every board of its set, as `link.rs` runs them) and are
//!    judged as a command group's are; a fresh attempt with a repeated event id, or a score
//!    that would land in another period than its attempt's, rolls everything back.
//!
//! Every step is in one transaction: a refusal at any of them leaves nothing written, the
//! attempt unused.
//!
//! On a board without review rules nothing is held, so steps 1 and 3 have nothing to do: its
//! command carries its attempt into its own statement (`sql/command/head.sql` judges and uses
//! it) and goes by the command groups like any other ([`Guard::in_statement`]).

pub mod attempt;
pub mod review;

use super::apply::Bound;
use super::command::{Fields, ScoreCommand, Writer};
use super::definition::{BoardDefinition, ReviewRules};
use super::link::{Judged, judge_rows, run_order};
use super::operator::Tally;
use super::submit::SubmitError;
use crate::db::{Database, StoreError, commit};
use crate::model::CommandOutcome;
pub use attempt::{Attempt, AttemptRefusal, StartError, start};

/// What guards a command on its board.
pub(super) struct Guard<'d> {
    attempt: Option<uuid::Uuid>,
    review: Option<&'d ReviewRules>,
}

impl Guard<'_> {
    /// The attempt a command carries into its own statement, when its statement can guard it
    /// alone (no review rules); None when it needs [`apply`]'s transaction.
    pub(super) fn in_statement(&self) -> Option<uuid::Uuid> {
        self.attempt.filter(|_| self.review.is_none())
    }
}

/// The guard of a command with `fields` on the board of `definition`; None when nothing
/// guards it (it then goes by the command groups like any other).
pub(super) fn guard<'d>(
    definition: &'d BoardDefinition,
    fields: &Fields<'_>,
) -> Result<Option<Guard<'d>>, AttemptRefusal> {
    // An approved held score is applied as it was: its rules held it once, its attempt was
    // used by it then.
    if fields.writer == Writer::Review {
        return Ok(None);
    }
    let attempt = fields
        .attempt
        .map(|a| uuid::Uuid::parse_str(a).map_err(|_| AttemptRefusal::Malformed))
        .transpose()?;
    match (&definition.attempts, attempt) {
        (None, Some(_)) => return Err(AttemptRefusal::NotUsed(definition.board.clone())),
        (Some(_), None) if fields.writer == Writer::Player => {
            return Err(AttemptRefusal::Required(definition.board.clone()));
        }
        _ => {}
    }
    let review = definition.review.as_ref();
    Ok((attempt.is_some() || review.is_some()).then_some(Guard { attempt, review }))
}

/// How often a guarded command's transaction runs again after losing a race.
const MAX_TRIES: usize = 4;

/// Applies a guarded command (`set[0]` on the board of `definition`, the boards it feeds after
/// it) as the module's documentation says.
pub(super) async fn apply(
    db: &Database,
    definition: &BoardDefinition,
    guard: &Guard<'_>,
    set: &[ScoreCommand],
    fields: &Fields<'_>,
    traceparent: Option<&str>,
) -> Result<CommandOutcome, SubmitError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match once(db, definition, guard, set, fields, traceparent).await {
            Ok(Some(outcome)) => return Ok(outcome),
            Ok(None) | Err(SubmitError::Store(StoreError::Contended(_))) if tries < MAX_TRIES => {}
            Ok(None) => {
                return Err(StoreError::Contended(
                    "a guarded command kept racing a concurrent one".into(),
                )
                .into());
            }
            Err(e) => return Err(e),
        }
    }
}

/// One transaction of [`apply`]; None when its statements ask to be run again.
async fn once(
    db: &Database,
    definition: &BoardDefinition,
    guard: &Guard<'_>,
    set: &[ScoreCommand],
    fields: &Fields<'_>,
    traceparent: Option<&str>,
) -> Result<Option<CommandOutcome>, SubmitError> {
    let cmd = set
        .first()
        .ok_or_else(|| StoreError::Internal("an empty command set".into()))?;
    let event = cmd.event_id.as_uuid();
    let user = cmd.user_id.as_str();
    let board = cmd.board.as_str();
    let mut client = db.client().await?;
    // Dropped without commit (every early return), the transaction rolls back.
    let tx = client.transaction().await?;
    let stmts = db.statements();
    stmts
        .query(&tx, &review::LOCK, [&event.to_string()])
        .await?;
    let stored = review::stored_fields(fields);
    if let Some(row) = stmts.query(&tx, &review::HELD, [&event]).await?.first() {
        return repeat_of_held(cmd, &stored, row).map(Some);
    }
    let mut used_now = false;
    let mut attempt_period = None;
    if let Some(attempt) = &guard.attempt {
        let row = stmts
            .query_one(&tx, &attempt::USE, [attempt, &event, &user, &board])
            .await?;
        let verdict: String = row.try_get("verdict")?;
        let wait_ms: i64 = row.try_get::<_, Option<i64>>("wait_ms")?.unwrap_or(0);
        if let Some(refusal) = AttemptRefusal::of_verdict(&verdict, wait_ms) {
            return Err(SubmitError::Attempt(refusal));
        }
        used_now = verdict == "use";
        attempt_period = row.try_get::<_, Option<String>>("period_board")?;
    }
    if let Some(rules) = guard.review {
        let row = stmts
            .query_one(
                &tx,
                &review::JUDGE,
                [&board, &user, &event, &rules.max_per_minute.is_some()],
            )
            .await?;
        let repeat: bool = row.try_get("repeat")?;
        let period_board: Option<String> = row.try_get("period_board")?;
        if let (false, Some(period_board)) = (repeat, period_board) {
            let standing = match row.try_get::<_, Option<i64>>("score")? {
                None => None,
                Some(score) => Some(Tally {
                    score,
                    rest: [
                        row.try_get::<_, Option<i64>>("col2")?.unwrap_or(0),
                        row.try_get::<_, Option<i64>>("col3")?.unwrap_or(0),
                    ],
                    version: row.try_get("version")?,
                }),
            };
            let this_minute: Option<i32> = row.try_get("this_minute")?;
            let (next, broken) = review::judge(rules, definition, cmd, standing, this_minute);
            if let Some(broken) = broken {
                if attempt_period.as_ref().is_some_and(|p| *p != period_board) {
                    return Err(SubmitError::Attempt(AttemptRefusal::Expired));
                }
                let told = Told::of(cmd, next, standing, &period_board);
                let answer_json = serde_json::to_string(&told)
                    .map_err(|e| StoreError::Internal(format!("held answer: {e}")))?;
                let row = stmts
                    .query_one(
                        &tx,
                        &review::HOLD,
                        [
                            &event,
                            &board,
                            &period_board,
                            &user,
                            &stored.to_string(),
                            &guard.attempt,
                            &broken.rule,
                            &broken.detail,
                            &answer_json,
                            &cmd.revision,
                        ],
                    )
                    .await?;
                if !row.try_get::<_, bool>("current")? {
                    return Err(StoreError::DefinitionChanged.into());
                }
                if !row.try_get::<_, bool>("held")? {
                    return Ok(None);
                }
                commit(tx).await?;
                tracing::info!(board, user, event = %event, rule = broken.rule, "score held for review");
                return Ok(Some(told.outcome(cmd, false)));
            }
        }
    }
    let order = run_order(set);
    let bound: Vec<Bound<'_>> = order
        .iter()
        .map(|&i| Bound::new(&set[i], traceparent))
        .collect();
    let mut rows = Vec::with_capacity(order.len());
    // Always the guarded statement: this path is the reviewed boards', and runs once.
    for (&i, b) in order.iter().zip(&bound) {
        rows.push(
            stmts
                .query_one(&tx, set[i].operator.statement(true), b.params())
                .await?,
        );
    }
    match judge_rows(set, order.iter().copied().zip(&rows)) {
        Judged::Keep(outcome) => {
            if used_now && outcome.duplicate {
                // The event id was applied before without this attempt.
                return Err(StoreError::EventIdReused(cmd.event_id).into());
            }
            if let Some(p) = &attempt_period
                && attempt::period_of(p) != outcome.period
            {
                return Err(SubmitError::Attempt(AttemptRefusal::Expired));
            }
            commit(tx).await?;
            if !outcome.duplicate {
                db.wake_projectors();
            }
            Ok(Some(outcome))
        }
        Judged::Undo(answer) => Ok(Some(answer?)),
        Judged::Again => Ok(None),
    }
}

/// What the sender of a held score is told: what the command would have made of the entry,
/// as though it was applied (the review is not for the player to see). Kept with the held
/// score, so a repeat is told the same.
#[derive(serde::Serialize, serde::Deserialize)]
struct Told {
    score: i64,
    scores: Option<Vec<i64>>,
    version: i64,
    improved: bool,
    period: Option<String>,
}

impl Told {
    fn of(cmd: &ScoreCommand, next: Tally, standing: Option<Tally>, period_board: &str) -> Self {
        Self {
            score: next.score,
            scores: cmd
                .columns
                .several()
                .then(|| cmd.columns.values(next.score, next.rest)),
            version: next.version,
            improved: standing != Some(next),
            period: attempt::period_of(period_board),
        }
    }

    fn outcome(self, cmd: &ScoreCommand, duplicate: bool) -> CommandOutcome {
        CommandOutcome {
            event_id: cmd.event_id,
            board: cmd.board.clone(),
            user_id: cmd.user_id.clone(),
            score: self.score,
            scores: self.scores,
            version: self.version,
            duplicate,
            improved: self.improved,
            period: self.period,
            // Review rules and cohorts never meet (competition/declare.rs refuses them).
            cohort: None,
            linked: Vec::new(),
        }
    }
}

/// The answer to a repeat of a held command: what it was told, as a repeat; a reuse of its
/// event id with another board, user or fields is refused.
fn repeat_of_held(
    cmd: &ScoreCommand,
    stored: &serde_json::Value,
    row: &tokio_postgres::Row,
) -> Result<CommandOutcome, SubmitError> {
    let board: String = row.try_get("board_id").map_err(StoreError::from)?;
    let user: String = row.try_get("user_id").map_err(StoreError::from)?;
    let fields: String = row.try_get("fields").map_err(StoreError::from)?;
    let answer: String = row.try_get("answer").map_err(StoreError::from)?;
    let same_fields = serde_json::from_str::<serde_json::Value>(&fields)
        .ok()
        .as_ref()
        == Some(stored);
    if board != cmd.board.as_str() || user != cmd.user_id.as_str() || !same_fields {
        return Err(StoreError::EventIdReused(cmd.event_id).into());
    }
    let told: Told = serde_json::from_str(&answer)
        .map_err(|e| StoreError::Internal(format!("held answer: {e}")))?;
    Ok(told.outcome(cmd, true))
}
