//! Running a score command: the operator's statement, once per event id, retried after a lost
//! race; the duplicate check on the answer.

use super::{ADD, BEST, LATEST};
use crate::db::{Database, StoreError};
use crate::domain::{BoardId, CommandOutcome, ScoreCommand};

/// How often a command is run again after losing a race (same event id arriving concurrently,
/// a best board's concurrent first submission) or a deadlock. One retry settles a race; the
/// rest is margin.
const MAX_ATTEMPTS: usize = 4;

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
    let statement = match cmd.operator {
        "add" => &ADD,
        "best" => &BEST,
        "latest" => &LATEST,
        other => {
            return Err(StoreError::Internal(format!(
                "no statement for operator {other:?}"
            )));
        }
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = db
            .query_one(
                statement,
                [
                    &cmd.event_id.as_uuid(),
                    &cmd.board.as_str(),
                    &cmd.user_id.as_str(),
                    &cmd.value,
                    &traceparent,
                    &cmd.revision,
                    &cmd.tie_sign,
                    &cmd.min_score,
                    &cmd.max_score,
                    &cmd.metadata,
                    &cmd.direction,
                ],
            )
            .await;
        let row = match result {
            Ok(row) => row,
            Err(StoreError::Contended(_)) if attempt < MAX_ATTEMPTS => continue,
            Err(e) => return Err(e),
        };
        let outcome: String = row.try_get("outcome")?;
        match outcome.as_str() {
            "applied" | "duplicate" => {}
            "stale_definition" => return Err(StoreError::DefinitionChanged),
            "score_out_of_range" => return Err(StoreError::ScoreOutOfRange),
            "retry" if attempt < MAX_ATTEMPTS => continue,
            other => {
                return Err(StoreError::Internal(format!(
                    "unexpected statement outcome {other:?}"
                )));
            }
        }
        let duplicate = outcome == "duplicate";
        // The board the statement wrote: the command's, or the period of it that was open.
        let written: String = row.try_get("board_id")?;
        let written = BoardId::parse_stored(&written).map_err(|_| {
            StoreError::Internal(format!("the statement wrote to board {written:?}"))
        })?;
        if duplicate {
            let user_id: String = row.try_get("user_id")?;
            let operator: String = row.try_get("operator")?;
            let submitted: Option<i64> = row.try_get("submitted")?;
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
            // A repeat after the board's period changed still names the same board.
            if written.base() != cmd.board
                || user_id != cmd.user_id.as_str()
                || operator != cmd.operator
                || submitted != Some(cmd.value)
                || !same_metadata
            {
                return Err(StoreError::EventIdReused(cmd.event_id));
            }
        }
        let improved: bool = row.try_get("improved")?;
        // Only a change writes an outbox row worth waking the projectors for.
        if !duplicate && improved {
            db.wake_projectors();
        }
        return Ok(CommandOutcome {
            event_id: cmd.event_id,
            // Equal to the command's: a different pair was refused above.
            board: cmd.board.clone(),
            user_id: cmd.user_id.clone(),
            score: row.try_get("score")?,
            version: row.try_get("version")?,
            duplicate,
            improved,
            period: written.period().map(str::to_owned),
        });
    }
}
