//! Grouped commits: score commands that arrive together share one transaction.
//!
//! One command per transaction pays, per command, a round trip, a transaction's start and a
//! commit (a WAL flush). Here a few workers take commands from one queue: a worker that is
//! free takes whatever is waiting (up to `max_size`), so a command that finds a worker idle
//! goes at once, alone, by [`apply_score_command`] (no added latency at low load), and commands
//! that arrive while every worker is busy leave together when one frees up.
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
//!   once its group has started, it is applied like any other command of the group.

use std::sync::Arc;

use futures_util::future::join_all;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_postgres::Row;

use super::apply::{Answer, Bound, answer, apply_score_command};
use super::command::ScoreCommand;
use crate::db::metrics;
use crate::db::{Database, Op, StoreError, pipeline};
use crate::model::CommandOutcome;

/// A command waiting for its group, and where its answer goes.
struct Pending {
    cmd: ScoreCommand,
    traceparent: Option<String>,
    reply: oneshot::Sender<Result<CommandOutcome, StoreError>>,
}

/// The queue of score commands and its workers. Cheap to clone; the workers stop once every
/// clone is dropped and the queue is empty.
#[derive(Clone)]
pub struct CommandGroups {
    queue: mpsc::Sender<Pending>,
}

impl CommandGroups {
    /// Starts `workers` workers, each running groups of at most `max_size` commands on `db`.
    /// Must be called within a Tokio runtime. `max_size` 1 turns grouping off: every command
    /// runs alone.
    pub fn start(db: Database, workers: usize, max_size: usize) -> Self {
        let workers = workers.max(1);
        let max_size = max_size.max(1);
        // Room for every worker's next group; past that a command waits for room (its request
        // is bounded by the api's own timeout).
        let (queue, rx) = mpsc::channel(workers * max_size);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..workers {
            tokio::spawn(work(db.clone(), rx.clone(), max_size));
        }
        Self { queue }
    }

    /// Commands waiting for a worker.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// Applies `cmd` exactly once per event id, in whichever group it joins; the answer is the
    /// one [`apply_score_command`] gives.
    pub async fn apply(
        &self,
        cmd: ScoreCommand,
        traceparent: Option<String>,
    ) -> Result<CommandOutcome, StoreError> {
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            cmd,
            traceparent,
            reply,
        };
        if self.queue.send(pending).await.is_err() {
            return Err(StoreError::Unavailable(
                "the command queue has stopped".to_owned(),
            ));
        }
        answer.await.map_err(|_| {
            StoreError::Internal("the command's group ended without an answer".to_owned())
        })?
    }
}

/// One worker: takes what is waiting, runs it, and again, until the queue closes.
async fn work(db: Database, rx: Arc<Mutex<mpsc::Receiver<Pending>>>, max_size: usize) {
    let mut group = Vec::with_capacity(max_size);
    loop {
        {
            // The worker holding the lock waits for the next command; the others wait for the
            // lock. Whatever queued meanwhile leaves with that command.
            let mut rx = rx.lock().await;
            if rx.recv_many(&mut group, max_size).await == 0 {
                return;
            }
        }
        run(&db, std::mem::take(&mut group)).await;
    }
}

async fn run(db: &Database, group: Vec<Pending>) {
    let mut group: Vec<Pending> = group.into_iter().filter(|p| !p.reply.is_closed()).collect();
    metrics::command_group(group.len());
    if group.len() <= 1 {
        alone(db, group).await;
        return;
    }
    // Stable: one user's commands keep their order of arrival.
    group.sort_by(|a, b| {
        (a.cmd.board.as_str(), a.cmd.user_id.as_str())
            .cmp(&(b.cmd.board.as_str(), b.cmd.user_id.as_str()))
    });
    let rows = match together(db, &group).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::debug!(error = %e, commands = group.len(), "a command group failed; its commands run alone");
            metrics::command_group_failed();
            alone(db, group).await;
            return;
        }
    };
    let mut again = Vec::new();
    let mut wake = false;
    for (p, row) in group.into_iter().zip(rows) {
        match answer(&p.cmd, &row) {
            Ok(Answer::Retry) => again.push(p),
            Ok(Answer::Done(outcome)) => {
                wake |= !outcome.duplicate && outcome.improved;
                let _ = p.reply.send(Ok(outcome));
            }
            Err(e) => {
                let _ = p.reply.send(Err(e));
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
        let outcome = apply_score_command(db, &p.cmd, p.traceparent.as_deref()).await;
        let _ = p.reply.send(outcome);
    }))
    .await;
}

/// Runs the group in one transaction (`db/pipeline.rs`) and answers each command's row, in the
/// group's order, or the error that rolled it back (or left its outcome unknown).
async fn together(db: &Database, group: &[Pending]) -> Result<Vec<Row>, StoreError> {
    let bound: Vec<Bound<'_>> = group
        .iter()
        .map(|p| Bound::new(&p.cmd, p.traceparent.as_deref()))
        .collect();
    let runs: Vec<pipeline::Run<'_, 11>> = group
        .iter()
        .zip(&bound)
        .map(|(p, b)| (p.cmd.operator.statement(), b.params()))
        .collect();
    pipeline::together(db, Op::CommandGroup, &runs).await
}
