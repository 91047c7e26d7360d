//! Running a score command: the board's statement, once per event id, retried after a lost
//! race; the duplicate check on the answer.

use super::BoardKind;
use crate::db::{Database, StoreError};
use crate::domain::{CommandOutcome, ScoreCommand};

/// How often a command is run again after losing a race (same event id arriving concurrently)
/// or a deadlock. One retry settles a race; the rest is margin.
const MAX_ATTEMPTS: usize = 4;

/// Applies a score command exactly once per event id, in one statement. `traceparent` (the
/// W3C trace context of the request) is stored in the outbox row for the projector's span.
///
/// A repeat with the same board, user and delta answers with the score and version that the
/// first application produced (`duplicate: true`); a repeat with another payload is refused.
pub async fn apply_score_command(
    db: &Database,
    cmd: &ScoreCommand,
    traceparent: Option<&str>,
) -> Result<CommandOutcome, StoreError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = db
            .query_one(
                BoardKind::of(&cmd.board).statement(),
                [
                    &cmd.event_id.as_uuid(),
                    &cmd.board.as_str(),
                    &cmd.user_id.as_str(),
                    &cmd.delta.get(),
                    &traceparent,
                ],
            )
            .await;
        let row = match result {
            Ok(row) => row,
            Err(StoreError::Contended(_)) if attempt < MAX_ATTEMPTS => continue,
            Err(e) => return Err(e),
        };
        let duplicate: bool = row.try_get("duplicate")?;
        let board: String = row.try_get("board_id")?;
        let user_id: String = row.try_get("user_id")?;
        let delta: i32 = row.try_get("delta")?;
        if duplicate
            && (board != cmd.board.as_str()
                || user_id != cmd.user_id.as_str()
                || delta != cmd.delta.get())
        {
            return Err(StoreError::EventIdReused(cmd.event_id));
        }
        if !duplicate {
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
        });
    }
}
