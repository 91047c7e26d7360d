//! One score command from its fields to its outcome: the board's definition (cached), the
//! command validated against it, applied through the command groups; once more against the
//! definition read again when the statement says the cached one is not the board's any more.

use super::command::Fields;
use super::definition::Definitions;
use super::group::CommandGroups;
use crate::db::{Database, StoreError};
use crate::model::{BoardId, CommandOutcome, ValidationError};

/// Why a command was not applied: a field its board's definition refuses, or the store.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Validates `fields` against `board`'s definition (from `definitions`, read through `db`) and
/// applies the command in `groups` exactly once per event id. A definition changed since it
/// was cached is forgotten, read again, and the command validated against it and applied once
/// more (it may now be invalid, and is then refused as such).
pub async fn submit(
    groups: &CommandGroups,
    definitions: &Definitions,
    db: &Database,
    board: &BoardId,
    fields: &Fields<'_>,
    traceparent: Option<String>,
) -> Result<CommandOutcome, SubmitError> {
    let definition = definitions.get(db, board).await?;
    let command = fields.validate(&definition)?;
    match groups.apply(command, traceparent.clone()).await {
        Err(StoreError::DefinitionChanged) => {
            definitions.forget(board);
            let definition = definitions.get(db, board).await?;
            let command = fields.validate(&definition)?;
            Ok(groups.apply(command, traceparent).await?)
        }
        other => Ok(other?),
    }
}
