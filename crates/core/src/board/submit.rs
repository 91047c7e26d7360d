//! One score command from its fields to its outcome: the board's definition (cached) and the
//! definitions of the boards it feeds, the command validated against each, applied through the
//! command groups, all of it or nothing (`link.rs`); once more against the definitions read
//! again when a statement says a cached one is not its board's any more.

use std::sync::Arc;

use super::command::{Fields, ScoreCommand, Writer};
use super::definition::{BoardDefinition, Definitions, WritePolicy};
use super::group::CommandGroups;
use super::guard::{self, AttemptRefusal};
use super::link::{Refused, fed_event};
use crate::db::{Database, StoreError};
use crate::model::{BoardId, CommandOutcome, ValidationError};

/// Why a command was not applied: a field its board's definition refuses, the store, or one
/// of the boards it feeds (then nothing was written on any board either).
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A board the command's board feeds refused it.
    #[error("board {board}: {error}")]
    Fed {
        board: BoardId,
        error: Box<SubmitError>,
    },
    /// A player's command to a board whose write policy is `server` (api: 403).
    #[error("board {0} takes scores from the game's servers only (write_policy server)")]
    ServerOnly(BoardId),
    /// The command's attempt (or its lack of one) was refused (`guard/attempt.rs`).
    #[error(transparent)]
    Attempt(#[from] AttemptRefusal),
    /// The board is a competition's and refused it (its code: `competition_ended`, …).
    #[error("the competition refused the score: {0}")]
    Competition(String),
}

impl From<tokio_postgres::Error> for SubmitError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(e.into())
    }
}

impl From<Refused> for SubmitError {
    fn from(r: Refused) -> Self {
        // Only the board the command was sent to carries its attempt.
        if let StoreError::AttemptRefused { verdict, wait_ms } = &r.error
            && let Some(refusal) = AttemptRefusal::of_verdict(verdict, *wait_ms)
        {
            return Self::Attempt(refusal);
        }
        if let StoreError::CompetitionRefused(code) = &r.error {
            return Self::Competition(code.clone());
        }
        match r.board {
            None => Self::Store(r.error),
            Some(board) => Self::Fed {
                board,
                error: Box::new(Self::Store(r.error)),
            },
        }
    }
}

/// Validates `fields` against `board`'s definition and each definition of the boards it feeds
/// (from `definitions`, read through `db`), and applies the command to all of them in `groups`
/// exactly once per event id. A definition changed since it was cached is forgotten, every
/// definition read again, and the command validated against them and applied once more (it may
/// now be invalid, and is then refused as such).
pub async fn submit(
    groups: &CommandGroups,
    definitions: &Definitions,
    db: &Database,
    board: &BoardId,
    fields: &Fields<'_>,
    traceparent: Option<String>,
) -> Result<CommandOutcome, SubmitError> {
    let (definition, set) = validated(definitions, db, board, fields).await?;
    match run(groups, db, &definition, set, fields, traceparent.as_deref()).await {
        Err(SubmitError::Store(StoreError::DefinitionChanged)) => {
            definitions.forget(board);
            for fed in &definition.feeds {
                definitions.forget(fed);
            }
            let (definition, set) = validated(definitions, db, board, fields).await?;
            run(groups, db, &definition, set, fields, traceparent.as_deref()).await
        }
        Err(SubmitError::Fed {
            board: changed,
            error,
        }) if matches!(*error, SubmitError::Store(StoreError::DefinitionChanged)) => {
            definitions.forget(board);
            definitions.forget(&changed);
            let (definition, set) = validated(definitions, db, board, fields).await?;
            run(groups, db, &definition, set, fields, traceparent.as_deref()).await
        }
        other => other,
    }
}

/// Applies a validated set: by the command groups, or, when its board guards it (attempts,
/// review rules), in a transaction of its own (`guard/`).
async fn run(
    groups: &CommandGroups,
    db: &Database,
    definition: &BoardDefinition,
    set: Vec<ScoreCommand>,
    fields: &Fields<'_>,
    traceparent: Option<&str>,
) -> Result<CommandOutcome, SubmitError> {
    match guard::guard(definition, fields)? {
        None => Ok(groups.apply(set, traceparent.map(str::to_owned)).await?),
        Some(g) => match g.in_statement() {
            Some(attempt) => {
                let mut set = set;
                if let Some(first) = set.first_mut() {
                    first.attempt = Some(attempt);
                }
                Ok(groups.apply(set, traceparent.map(str::to_owned)).await?)
            }
            None => guard::apply(db, definition, &g, &set, fields, traceparent).await,
        },
    }
}

/// Whether the board of `definition` takes what `writer` sends (a score, or what leads to one:
/// an attempt's start): a player only where the write policy is `player`.
pub fn check_write_policy(definition: &BoardDefinition, writer: Writer) -> Result<(), SubmitError> {
    if writer == Writer::Player && definition.write_policy != WritePolicy::Player {
        return Err(SubmitError::ServerOnly(definition.board.clone()));
    }
    Ok(())
}

/// The command for `board` and each board its definition feeds, in the definition's order,
/// each validated against its own board's definition.
async fn validated(
    definitions: &Definitions,
    db: &Database,
    board: &BoardId,
    fields: &Fields<'_>,
) -> Result<(Arc<BoardDefinition>, Vec<ScoreCommand>), SubmitError> {
    let definition = definitions.get(db, board).await?;
    // The board the command is sent to decides; the boards it feeds were linked to it by an
    // admin. A policy changed since this definition was cached changed its revision, so the
    // statement refuses to run under it and the command is judged here again.
    check_write_policy(&definition, fields.writer)?;
    let first = fields.validate(&definition)?;
    let mut set = Vec::with_capacity(1 + definition.feeds.len());
    for fed in &definition.feeds {
        let fed_definition = definitions.get(db, fed).await?;
        let mut cmd = fields
            .validate(&fed_definition)
            .map_err(|e| SubmitError::Fed {
                board: fed.clone(),
                error: Box::new(e.into()),
            })?;
        cmd.source_event = Some(first.event_id);
        cmd.event_id = fed_event(&first.event_id, fed);
        set.push(cmd);
    }
    set.insert(0, first);
    Ok((definition, set))
}
