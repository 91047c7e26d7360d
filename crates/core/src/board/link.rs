//! Linked boards: one command to a board that feeds others (its definition's `feeds`) applies
//! to each of them too, in one transaction, under each board's own rule, bounds and period,
//! with one event id. All of it or nothing: a value one board refuses refuses the whole
//! command, nothing written anywhere.
//!
//! Each fed board's command is an ordinary command of that board (its own statement, its own
//! idempotency record and outbox row), recorded under an event id derived from the command's
//! ([`fed_event`]: a UUID v5 of the board's id in the command's id), with the command's own id
//! in `score_events.source_event`. So a repeat of the command finds every board's record and
//! answers for all of them; a reuse of its id with another payload is refused by every board's
//! statement alike; and nothing about projection, reconciliation or periods knows that a row
//! came from a link.
//!
//! The statements of a set run pipelined in one transaction (`db/pipeline.rs`), in board id
//! order (one order of row locks, so two sets never wait on each other in a cycle), and the
//! answers decide whether it commits ([`judge`]): every board applied (or repeated), or it is
//! rolled back.

use tokio_postgres::Row;

use super::apply::{Answer, Bound, MAX_ATTEMPTS, answer, apply_score_command};
use super::command::ScoreCommand;
use super::guarded;
use super::operator::PARAMETER_COUNT;
use crate::db::pipeline::{self, Finish};
use crate::db::{Database, Op, StoreError};
use crate::model::{BoardId, CommandOutcome, EventId, FedOutcome};

/// The event id under which board `board` records a command fed to it by the board the
/// command was sent with id `source` to.
pub fn fed_event(source: &EventId, board: &BoardId) -> EventId {
    EventId::from(uuid::Uuid::new_v5(
        &source.as_uuid(),
        board.as_str().as_bytes(),
    ))
}

/// Why a command (and every board it feeds) was not applied: the store's answer, and the fed
/// board that gave it (None: the board the command was sent to, or the whole transaction).
#[derive(Debug, thiserror::Error)]
#[error("{}{error}", board.as_ref().map(|b| format!("board {b}: ")).unwrap_or_default())]
pub struct Refused {
    pub board: Option<BoardId>,
    #[source]
    pub error: StoreError,
}

impl From<StoreError> for Refused {
    fn from(error: StoreError) -> Self {
        Self { board: None, error }
    }
}

/// What a set's answers make of it.
pub(super) enum Judged {
    /// Commit, and answer this.
    Keep(CommandOutcome),
    /// Roll back, and answer this (a refusal, or a repeat that found boards the first run
    /// did not feed).
    Undo(Result<CommandOutcome, Refused>),
    /// Roll back and run the set again (a race the statements detected).
    Again,
}

/// Judges the answers of a set's commands (`set[0]` the board the command was sent to, the
/// fed boards after it, each answer beside its command):
/// - a refusal from any board refuses the whole command, naming the fed board that refused;
/// - a race any statement detected runs the whole set again;
/// - every board applied it (or repeated it): commit. A repeat of a command whose first run
///   fed fewer boards (a link declared since) answers for the boards it fed, and writes
///   nothing (rolled back): one command, one effect.
pub(super) fn judge(set: &[ScoreCommand], answers: Vec<Result<Answer, StoreError>>) -> Judged {
    let mut outcomes = Vec::with_capacity(answers.len());
    for (cmd, a) in set.iter().zip(answers) {
        match a {
            Ok(Answer::Done(outcome)) => outcomes.push(outcome),
            Ok(Answer::Retry) => return Judged::Again,
            Err(error) => {
                let board = cmd.source_event.map(|_| cmd.board.clone());
                return Judged::Undo(Err(Refused { board, error }));
            }
        }
    }
    let mut outcomes = outcomes.into_iter();
    let Some(mut first) = outcomes.next() else {
        return Judged::Undo(Err(
            StoreError::Internal("an empty command set".into()).into()
        ));
    };
    let fed: Vec<CommandOutcome> = outcomes.collect();
    let fresh = fed.iter().any(|o| !o.duplicate);
    let repeat = first.duplicate;
    first.linked = fed
        .into_iter()
        .filter(|o| !repeat || o.duplicate)
        .map(|o| FedOutcome {
            board: o.board,
            score: o.score,
            scores: o.scores,
            version: o.version,
            duplicate: o.duplicate,
            improved: o.improved,
            period: o.period,
        })
        .collect();
    if repeat && fresh {
        Judged::Undo(Ok(first))
    } else {
        Judged::Keep(first)
    }
}

/// The order a set's statements run in: by board id (every set takes its row locks in one
/// order), each with its place in the set.
pub(super) fn run_order(set: &[ScoreCommand]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..set.len()).collect();
    order.sort_by(|&a, &b| set[a].board.as_str().cmp(set[b].board.as_str()));
    order
}

/// Applies a command to its board and every board it feeds (`set[0]` first, the fed boards
/// after it), all of it or nothing, exactly once per event id; a set of one is a plain command
/// ([`apply_score_command`]).
pub async fn apply_set(
    db: &Database,
    set: &[ScoreCommand],
    traceparent: Option<&str>,
) -> Result<CommandOutcome, Refused> {
    if let [one] = set {
        return Ok(apply_score_command(db, one, traceparent).await?);
    }
    let order = run_order(set);
    let bound: Vec<Bound<'_>> = order
        .iter()
        .map(|&i| Bound::new(&set[i], traceparent))
        .collect();
    let mut attempt = 0;
    loop {
        attempt += 1;
        // Chosen again on every run: a competition's board found by the unguarded statement
        // runs guarded the next time.
        let runs: Vec<pipeline::Run<'_, PARAMETER_COUNT>> = order
            .iter()
            .zip(&bound)
            .map(|(&i, b)| (guarded::statement(&set[i]), b.params()))
            .collect();
        let judged = pipeline::together_then(db, Op::ScoreCommand, &runs, |rows| {
            let judged = judge_rows(set, order.iter().copied().zip(&rows));
            let finish = match judged {
                Judged::Keep(_) => Finish::Commit,
                _ => Finish::Rollback,
            };
            (finish, judged)
        })
        .await;
        match judged {
            Ok(Judged::Keep(outcome)) => {
                if !outcome.duplicate {
                    db.wake_projectors();
                }
                return Ok(outcome);
            }
            Ok(Judged::Undo(answer)) => return answer,
            Ok(Judged::Again) | Err(StoreError::Contended(_)) if attempt < MAX_ATTEMPTS => {}
            Ok(Judged::Again) => {
                return Err(StoreError::Internal(
                    "the statements asked for a retry too often".to_owned(),
                )
                .into());
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// [`judge`] of the rows a set's statements answered, each beside the place of its command in
/// the set (they ran in another order).
pub(super) fn judge_rows<'r>(
    set: &[ScoreCommand],
    rows: impl IntoIterator<Item = (usize, &'r Row)>,
) -> Judged {
    let mut answers: Vec<Option<Result<Answer, StoreError>>> =
        (0..set.len()).map(|_| None).collect();
    for (i, row) in rows {
        if let Some(slot) = answers.get_mut(i) {
            *slot = Some(answer(&set[i], row));
        }
    }
    let answers = answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(StoreError::Internal("a run did not answer".into()))))
        .collect();
    judge(set, answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fed_board_has_its_own_stable_event_id() {
        let source = EventId::parse("6f9619ff-8b86-d011-b42d-00c04fc964ff").expect("an event id");
        let daily = BoardId::parse("runs-daily").expect("board");
        let weekly = BoardId::parse("runs-weekly").expect("board");
        let a = fed_event(&source, &daily);
        assert_eq!(a, fed_event(&source, &daily));
        assert_ne!(a, fed_event(&source, &weekly));
        assert_ne!(a, source);
        assert_eq!(a.as_uuid().get_version_num(), 5);
    }
}
