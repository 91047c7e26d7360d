//! Running a score command: the operator's statement, once per event id, retried after a lost
//! race; the duplicate check on the answer.

use tokio_postgres::Row;

use super::command::ScoreCommand;
use super::guarded;
use super::operator::PARAMETER_COUNT;
use crate::db::{Database, Params, StoreError};
use crate::model::{BoardId, CommandOutcome};

/// How often a command is run again after losing a race (same event id arriving concurrently,
/// a best board's concurrent first submission) or a deadlock. One retry settles a race; the
/// rest is margin.
pub(super) const MAX_ATTEMPTS: usize = 4;

/// Applies a score command exactly once per event id, in one statement. `traceparent` (the
/// W3C trace context of the request) is stored in the outbox row for the projector's span.
///
/// A repeat with the same board, user, operator, value and metadata answers with the outcome
/// the first application produced (`duplicate: true`, its `improved`); a repeat with anything
/// else is refused. A command validated against another revision of the board's definition
/// than the database holds is refused with [`StoreError::DefinitionChanged`], nothing written.
pub async fn apply_score_command(
    db: &Database,
    cmd: &ScoreCommand,
    traceparent: Option<&str>,
) -> Result<CommandOutcome, StoreError> {
    let bound = Bound::new(cmd, traceparent);
    let mut attempt = 0;
    loop {
        attempt += 1;
        // Chosen again on every run: a competition's board found by the unguarded statement
        // runs guarded the next time.
        let result = db.query_one(guarded::statement(cmd), bound.params()).await;
        let row = match result {
            Ok(row) => row,
            Err(StoreError::Contended(_)) if attempt < MAX_ATTEMPTS => continue,
            Err(e) => return Err(e),
        };
        match answer(cmd, &row)? {
            Answer::Retry if attempt < MAX_ATTEMPTS => continue,
            Answer::Retry => {
                return Err(StoreError::Internal(
                    "the statement asked for a retry too often".to_owned(),
                ));
            }
            Answer::Done(outcome) => {
                // Only a change writes an outbox row worth waking the projectors for.
                if !outcome.duplicate && outcome.improved {
                    db.wake_projectors();
                }
                return Ok(outcome);
            }
        }
    }
}

/// A command's statement parameters, owned where the command holds them borrowed.
pub(super) struct Bound<'a> {
    cmd: &'a ScoreCommand,
    event_id: uuid::Uuid,
    board: &'a str,
    user_id: &'a str,
    traceparent: Option<&'a str>,
    columns: i16,
    source_event: Option<uuid::Uuid>,
}

impl<'a> Bound<'a> {
    pub(super) fn new(cmd: &'a ScoreCommand, traceparent: Option<&'a str>) -> Self {
        Self {
            cmd,
            event_id: cmd.event_id.as_uuid(),
            board: cmd.board.as_str(),
            user_id: cmd.user_id.as_str(),
            traceparent,
            columns: cmd.columns.count() as i16,
            source_event: cmd.source_event.map(|e| e.as_uuid()),
        }
    }

    /// In the order of `PARAMETERS` (`board/operator.rs`).
    pub(super) fn params(&self) -> Params<'_, PARAMETER_COUNT> {
        let c = self.cmd;
        [
            &self.event_id,
            &self.board,
            &self.user_id,
            &c.value,
            &self.traceparent,
            &c.revision,
            &c.tie_sign,
            &c.min_score,
            &c.max_score,
            &c.metadata,
            &c.direction,
            &self.columns,
            &c.rest[0],
            &c.rest[1],
            &c.rest_bounds[0].0,
            &c.rest_bounds[0].1,
            &c.rest_bounds[1].0,
            &c.rest_bounds[1].1,
            &self.source_event,
            &c.attempt,
        ]
    }
}

/// What one run of the statement answered for `cmd`.
pub(super) enum Answer {
    Done(CommandOutcome),
    /// Lost a race the statement detected itself (a best board's concurrent first
    /// submission): nothing written, run it again.
    Retry,
}

/// Reads the statement's row: the outcome, or the refusal (another revision, the score range,
/// the event id reused with another payload).
pub(super) fn answer(cmd: &ScoreCommand, row: &Row) -> Result<Answer, StoreError> {
    let outcome: String = row.try_get("outcome")?;
    match outcome.as_str() {
        "applied" | "duplicate" => {}
        "stale_definition" => return Err(StoreError::DefinitionChanged),
        "score_out_of_range" => return Err(StoreError::ScoreOutOfRange),
        "retry" => return Ok(Answer::Retry),
        // The unguarded statement found a competition: nothing written; run it guarded.
        guarded::OUTCOME => {
            guarded::remember(&cmd.board);
            return Ok(Answer::Retry);
        }
        code if code.starts_with("competition_") => {
            return Err(StoreError::CompetitionRefused(code.to_owned()));
        }
        verdict if verdict.starts_with("attempt_") => {
            let wait_ms = row
                .try_get::<_, Option<i64>>("attempt_wait_ms")?
                .unwrap_or(0);
            return Err(StoreError::AttemptRefused {
                verdict: verdict.to_owned(),
                wait_ms,
            });
        }
        other => {
            return Err(StoreError::Internal(format!(
                "unexpected statement outcome {other:?}"
            )));
        }
    }
    let duplicate = outcome == "duplicate";
    // The board the statement wrote: the command's, or the period of it that was open.
    let written: String = row.try_get("board_id")?;
    let written = BoardId::parse_stored(&written)
        .map_err(|_| StoreError::Internal(format!("the statement wrote to board {written:?}")))?;
    if duplicate {
        let user_id: String = row.try_get("user_id")?;
        let operator: String = row.try_get("operator")?;
        let submitted: Option<i64> = row.try_get("submitted")?;
        // What it submitted in its other columns, as the statement records them (NULL past
        // the board's columns).
        let submitted_rest = [
            row.try_get::<_, Option<i64>>("submitted2")?,
            row.try_get::<_, Option<i64>>("submitted3")?,
        ];
        let rest = std::array::from_fn(|i| (i + 2 <= cmd.columns.count()).then_some(cmd.rest[i]));
        let metadata: Option<String> = row.try_get("metadata")?;
        // jsonb normalizes its text: compare the parsed values.
        let same_metadata = match (&metadata, &cmd.metadata) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                serde_json::from_str::<serde_json::Value>(a).ok()
                    == serde_json::from_str::<serde_json::Value>(b).ok()
            }
            _ => false,
        };
        // A repeat with an attempt must carry the one its first run used.
        let used_by: Option<uuid::Uuid> = row.try_get("attempt_used_by")?;
        let other_attempt = cmd.attempt.is_some() && used_by != Some(cmd.event_id.as_uuid());
        // A repeat after the board's period changed still names the same board.
        if other_attempt
            || written.base() != cmd.board
            || user_id != cmd.user_id.as_str()
            || operator != cmd.operator.as_str()
            || submitted != Some(cmd.value)
            || submitted_rest != rest
            || !same_metadata
        {
            return Err(StoreError::EventIdReused(cmd.event_id));
        }
    }
    let score: i64 = row.try_get("score")?;
    let rest = [
        row.try_get::<_, Option<i64>>("col2")?.unwrap_or(0),
        row.try_get::<_, Option<i64>>("col3")?.unwrap_or(0),
    ];
    Ok(Answer::Done(CommandOutcome {
        event_id: cmd.event_id,
        // Equal to the command's: a different pair was refused above.
        board: cmd.board.clone(),
        user_id: cmd.user_id.clone(),
        score,
        scores: cmd
            .columns
            .several()
            .then(|| cmd.columns.values(score, rest)),
        version: row.try_get("version")?,
        duplicate,
        improved: row.try_get("improved")?,
        // A cohort's board is `<board>~<period>~<cohort>`: the period, and the cohort apart.
        period: written
            .period()
            .and_then(|p| p.split(crate::model::PERIOD_SEPARATOR).next())
            .map(str::to_owned),
        cohort: written.cohort(),
        linked: Vec::new(),
    }))
}
