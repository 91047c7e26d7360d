//! Grouped commits: score commands that arrive together share one transaction.
//!
//! One command per transaction pays, per command, a round trip, a transaction's start and a
//! commit (a WAL flush). Here commands share one queue (`db/group_queue.rs`) of which at most
//! `workers` groups run at once: a command that finds nothing queued and a group's place free
//! goes at once, alone, by [`apply_set`] on its caller's task (no added latency at low load),
//! and commands that arrive while every place is taken leave together when one frees up.
//!
//! A group of more than one runs in one transaction: BEGIN and each command's own statement,
//! pipelined in one round trip, then COMMIT (`db/pipeline.rs`). Each command keeps its own answer (201, 200
//! duplicate, 409, 422), read from its own statement's row exactly as alone.
//!
//! - **Order.** The group is sorted by board and user, stably: commands of one user run in the
//!   order they arrived (the same event id twice in one group: the second sees the first and
//!   answers as a repeat), and every group takes its row locks in one order, so two groups
//!   never wait on each other in a cycle. The period lock of `lb_command_board` is shared by
//!   every command; a deadlock with a waiting close is still possible and PostgreSQL's detector
//!   breaks it, which fails that group and nothing else.
//! - **One command's failure never fails another's.** A statement that fails (a lost race on
//!   one event id, a deadlock, a statement timeout) aborts the transaction: it is rolled back
//!   and each command of the group runs again alone, concurrently. Nothing of the group was
//!   committed, so nothing is applied twice.
//! - **A lost connection** (or no answer within the round-trip bound) while the group ran or
//!   committed: whether it committed is unknown. Each command runs again alone; the event id
//!   makes that safe. A command whose group did commit then answers as a repeat (200,
//!   `duplicate: true`), as it would to a client's own retry.
//! - **A caller that gave up** (its HTTP request dropped) before its group started is left out;
//!   once a group of several has started, it is applied like any other command of the group.
//!   A command running alone on its caller's task is cancelled with it (the statement may or
//!   may not have committed; a retry with its event id answers either way).
//! - **Linked boards** (`link.rs`): a command to a board that feeds others is a set of
//!   statements, one per board, all of it or nothing. Its statements join the group's, sorted
//!   with them; when one of a set's statements refuses it (or races), the whole group is
//!   rolled back before COMMIT and each command runs alone, the set in a transaction of its
//!   own.

use futures_util::future::join_all;
use tokio::sync::oneshot;

use super::apply::Bound;
use super::command::ScoreCommand;
use super::guarded;
use super::link::{Judged, Refused, apply_set, judge_rows};
use super::operator::PARAMETER_COUNT;
use crate::db::group_queue::GroupQueue;
use crate::db::metrics;
use crate::db::pipeline::Finish;
use crate::db::{Database, Op, StoreError, pipeline};
use crate::model::CommandOutcome;

/// A command waiting for its group, and where its answer goes: its statements, one per board
/// (the board it was sent to first, then the boards it feeds).
struct Pending {
    set: Vec<ScoreCommand>,
    traceparent: Option<String>,
    reply: oneshot::Sender<Result<CommandOutcome, Refused>>,
}

/// The queue of score commands and its workers (`db/group_queue.rs`). Cheap to clone; the
/// workers stop once every clone is dropped and the queue is empty.
#[derive(Clone)]
pub struct CommandGroups {
    queue: GroupQueue<Pending>,
}

impl CommandGroups {
    /// Starts `workers` workers, each running groups of at most `max_size` commands on `db`.
    /// Must be called within a Tokio runtime. `max_size` 1 turns grouping off: every command
    /// runs alone.
    pub fn start(db: Database, workers: usize, max_size: usize) -> Self {
        let queue = GroupQueue::start(workers, max_size, move |group| {
            let db = db.clone();
            async move { run(&db, group).await }
        });
        Self { queue }
    }

    /// Commands waiting for a worker.
    pub fn queued(&self) -> usize {
        self.queue.queued()
    }

    /// Applies a command to its board and the boards it feeds (`set`: the board it was sent
    /// to first) exactly once per event id, all of it or nothing, in whichever group it joins;
    /// the answer is the one [`apply_set`] gives.
    pub async fn apply(
        &self,
        set: Vec<ScoreCommand>,
        traceparent: Option<String>,
    ) -> Result<CommandOutcome, Refused> {
        self.queue
            .ask("command", |reply| Pending {
                set,
                traceparent,
                reply,
            })
            .await?
    }
}

async fn run(db: &Database, group: Vec<Pending>) {
    let group: Vec<Pending> = group.into_iter().filter(|p| !p.reply.is_closed()).collect();
    metrics::command_group(group.len());
    if group.len() <= 1 {
        alone(db, group).await;
        return;
    }
    let judged = match together(db, &group).await {
        Ok(Some(judged)) => judged,
        // A set refused or raced: nothing of the group was committed.
        Ok(None) => {
            alone(db, group).await;
            return;
        }
        Err(e) => {
            tracing::debug!(error = %e, commands = group.len(), "a command group failed; its commands run alone");
            metrics::command_group_failed();
            alone(db, group).await;
            return;
        }
    };
    let mut again = Vec::new();
    let mut wake = false;
    for (p, judged) in group.into_iter().zip(judged) {
        match judged {
            Judged::Again => again.push(p),
            Judged::Keep(outcome) => {
                wake |= !outcome.duplicate && outcome.improved;
                let _ = p.reply.send(Ok(outcome));
            }
            Judged::Undo(answer) => {
                let _ = p.reply.send(answer);
            }
        }
    }
    // One wake-up for the group's outbox rows.
    if wake {
        db.wake_projectors();
    }
    alone(db, again).await;
}

/// Each command by itself, concurrently, each answer sent as it comes.
async fn alone(db: &Database, group: Vec<Pending>) {
    join_all(group.into_iter().map(|p| async move {
        let outcome = apply_set(db, &p.set, p.traceparent.as_deref()).await;
        let _ = p.reply.send(outcome);
    }))
    .await;
}

/// Runs the group's statements in one transaction (`db/pipeline.rs`), sorted by board and
/// user, stably (one user's commands keep their order of arrival, and every group takes its row
/// locks in one order), and judges each command on its statements' rows (`link::judge`). A
/// command of one statement that is refused or raced wrote nothing, and the group commits
/// without it; a set (linked boards) refused or raced is undone with the whole group: None.
async fn together(db: &Database, group: &[Pending]) -> Result<Option<Vec<Judged>>, StoreError> {
    let mut slots: Vec<(usize, usize)> = group
        .iter()
        .enumerate()
        .flat_map(|(p, pending)| (0..pending.set.len()).map(move |i| (p, i)))
        .collect();
    let cmd = |&(p, i): &(usize, usize)| &group[p].set[i];
    slots.sort_by(|a, b| {
        (cmd(a).board.as_str(), cmd(a).user_id.as_str())
            .cmp(&(cmd(b).board.as_str(), cmd(b).user_id.as_str()))
    });
    let bound: Vec<Bound<'_>> = slots
        .iter()
        .map(|slot| Bound::new(cmd(slot), group[slot.0].traceparent.as_deref()))
        .collect();
    let runs: Vec<pipeline::Run<'_, PARAMETER_COUNT>> = slots
        .iter()
        .zip(&bound)
        .map(|(slot, b)| (guarded::statement(cmd(slot)), b.params()))
        .collect();
    pipeline::together_then(db, Op::CommandGroup, &runs, |rows| {
        let mut answered: Vec<Vec<(usize, &tokio_postgres::Row)>> = group
            .iter()
            .map(|p| Vec::with_capacity(p.set.len()))
            .collect();
        for (&(p, i), row) in slots.iter().zip(&rows) {
            answered[p].push((i, row));
        }
        let judged: Vec<Judged> = group
            .iter()
            .zip(answered)
            .map(|(p, rows)| judge_rows(&p.set, rows))
            .collect();
        let undone = group
            .iter()
            .zip(&judged)
            .any(|(p, j)| p.set.len() > 1 && !matches!(j, Judged::Keep(_)));
        if undone {
            (Finish::Rollback, None)
        } else {
            (Finish::Commit, Some(judged))
        }
    })
    .await
}
