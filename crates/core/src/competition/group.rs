//! Grouped entries: entries that arrive together share one transaction, as score commands do
//! (`board/group.rs`, which says why in full). Every entry of a run waits for the run's row
//! lock (the cap and the cohorts are decided under it), which its transaction holds until its
//! commit, WAL flush included: one entry per transaction makes a run's entries as fast as one
//! commit after another. A group pays one commit for all of its entries.
//!
//! A worker that is free takes whatever is waiting (up to `max_size`): an entry that finds it
//! idle goes at once, alone. A group runs BEGIN and each entry's call pipelined, then COMMIT
//! (`db/pipeline.rs`), sorted by competition and player (stably), so groups take run locks in
//! one order. Each entry keeps its own answer, read from its own row exactly as alone (a
//! refusal is a row, not an error, and aborts nothing). A call that fails (a lost race on one
//! new player, a statement timeout, a lost connection) rolls the whole group back, and each
//! entry runs again alone: entries are idempotent per player and run, so one whose group did
//! commit answers as a repeat.

use futures_util::future::join_all;
use tokio::sync::oneshot;

use super::CompetitionError;
use super::enter::{ENTER, Entered, check_rating, enter, entered};
use crate::db::group_queue::GroupQueue;
use crate::db::pipeline::{self, Finish};
use crate::db::{Database, Op, Params};
use crate::model::{BoardId, UserId};

/// An entry waiting for its group, and where its answer goes.
struct Pending {
    id: BoardId,
    user: UserId,
    /// The id and user as the call's parameters.
    id_text: String,
    user_text: String,
    rating: Option<i64>,
    reply: oneshot::Sender<Result<Entered, CompetitionError>>,
}

/// The queue of entries and its workers (`db/group_queue.rs`). Cheap to clone; the workers
/// stop once every clone is dropped and the queue is empty.
#[derive(Clone)]
pub struct EntryGroups {
    queue: GroupQueue<Pending>,
}

impl EntryGroups {
    /// Starts `workers` workers, each running groups of at most `max_size` entries on `db`
    /// (1: every entry alone). Must be called within a Tokio runtime.
    pub fn start(db: Database, workers: usize, max_size: usize) -> Self {
        let queue = GroupQueue::start(workers, max_size, move |group| {
            let db = db.clone();
            async move { run(&db, group).await }
        });
        Self { queue }
    }

    /// Enters `user` into the competition `id`'s run open now, in whichever group it joins;
    /// the answer is the one [`enter`] gives.
    pub async fn enter(
        &self,
        id: BoardId,
        user: UserId,
        rating: Option<i64>,
    ) -> Result<Entered, CompetitionError> {
        check_rating(rating)?;
        self.queue
            .ask("entry", |reply| Pending {
                id_text: id.as_str().to_owned(),
                user_text: user.as_str().to_owned(),
                id,
                user,
                rating,
                reply,
            })
            .await?
    }
}

async fn run(db: &Database, group: Vec<Pending>) {
    let mut group: Vec<Pending> = group.into_iter().filter(|p| !p.reply.is_closed()).collect();
    if group.len() <= 1 {
        alone(db, group).await;
        return;
    }
    group.sort_by(|a, b| (a.id.as_str(), a.user.as_str()).cmp(&(b.id.as_str(), b.user.as_str())));
    let runs: Vec<pipeline::Run<'_, 3>> = group
        .iter()
        .map(|p| {
            let params: Params<'_, 3> = [&p.id_text, &p.user_text, &p.rating];
            (&ENTER, params)
        })
        .collect();
    let answered = pipeline::together_then(db, Op::Competition, &runs, |rows| {
        let answers: Vec<Result<Entered, CompetitionError>> = group
            .iter()
            .zip(&rows)
            .map(|(p, row)| entered(&p.id, &p.user, row))
            .collect();
        // An answer that is not one (a row the code cannot read) undoes the group.
        if answers
            .iter()
            .any(|a| matches!(a, Err(CompetitionError::Store(_))))
        {
            (Finish::Rollback, None)
        } else {
            (Finish::Commit, Some(answers))
        }
    })
    .await;
    match answered {
        Ok(Some(answers)) => {
            for (p, answer) in group.into_iter().zip(answers) {
                let _ = p.reply.send(answer);
            }
        }
        Ok(None) => alone(db, group).await,
        Err(e) => {
            tracing::debug!(error = %e, entries = group.len(), "an entry group failed; its entries run alone");
            alone(db, group).await;
        }
    }
}

/// Each entry by itself, concurrently, each answer sent as it comes.
async fn alone(db: &Database, group: Vec<Pending>) {
    join_all(group.into_iter().map(|p| async move {
        let answer = enter(db, &p.id, &p.user, p.rating).await;
        let _ = p.reply.send(answer);
    }))
    .await;
}
