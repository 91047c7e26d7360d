//! Statements in one transaction, pipelined: BEGIN and every run sent in one round trip, then
//! COMMIT once each run has answered (ROLLBACK when one failed, or when the caller's decision
//! on the answers says so). What runs together, and what to do when the transaction fails, is
//! the caller's (the command groups, `board/group.rs`, and linked boards, `board/link.rs`).

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;

use futures_util::future::{MaybeDone, maybe_done};
use tokio_postgres::Row;

use super::metrics::Op;
use super::pool::Database;
use super::statement::{Params, Ready, Statement};
use super::{StatementClient, StoreError};

/// One run of a statement in [`together`]: the statement and its parameters.
pub type Run<'a, const N: usize> = (&'static Statement<N>, Params<'a, N>);

/// How a transaction whose runs all answered ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Commit,
    Rollback,
}

/// Runs `runs` in one transaction on a pooled connection, within the round-trip bound, timed
/// under `op`, and answers each run's one row in order, or the error that rolled the
/// transaction back (or, when COMMIT or ROLLBACK itself failed, left its outcome unknown: that
/// connection is then dropped rather than pooled).
pub async fn together<const N: usize>(
    db: &Database,
    op: Op,
    runs: &[Run<'_, N>],
) -> Result<Vec<Row>, StoreError> {
    together_then(db, op, runs, |rows| (Finish::Commit, rows)).await
}

/// [`together`], with the end of the transaction decided on the runs' rows: `decide` sees
/// them once every run has answered, before COMMIT is sent, and says whether to commit or to
/// roll back, with what to answer. No round trip is added: COMMIT waits for the answers
/// anyway.
pub async fn together_then<const N: usize, T>(
    db: &Database,
    op: Op,
    runs: &[Run<'_, N>],
    decide: impl FnOnce(Vec<Row>) -> (Finish, T),
) -> Result<T, StoreError> {
    let stmts = db.statements();
    let client = db.client().await?;
    let (client, ran) = db
        .bounded(op, client, async |c| {
            // Each statement prepared before anything is sent: a run then goes out on its
            // future's first poll, so BEGIN and the runs reach the server in order.
            let mut ready: Vec<(&Statement<N>, Ready<'_, N>)> = Vec::new();
            for (s, _) in runs {
                if !ready.iter().any(|(k, _)| std::ptr::eq(*k, *s)) {
                    ready.push((s, stmts.ready(c, s).await?));
                }
            }
            let futures = runs.iter().map(|(s, params)| {
                let r = ready
                    .iter()
                    .find(|(k, _)| std::ptr::eq(*k, *s))
                    .map(|(_, r)| r)
                    .ok_or(());
                async move {
                    match r {
                        Ok(r) => r.query_one(c, *params).await.map_err(Ran::Statement),
                        Err(()) => Err(Ran::Unprepared),
                    }
                }
            });
            let begin = c.pg().batch_execute("BEGIN");
            let rows = pipeline(begin, futures.collect()).await;
            // COMMIT only after every run answered, and the caller agreed: a failed run aborted
            // the transaction, which is then rolled back, explicitly, so the connection goes
            // back clean.
            let verdict = match rows.map(decide) {
                Ok((Finish::Commit, answer)) => {
                    c.pg().batch_execute("COMMIT").await.map(|()| Ok(answer))
                }
                Ok((Finish::Rollback, answer)) => {
                    c.pg().batch_execute("ROLLBACK").await.map(|()| Ok(answer))
                }
                Err(e) => c.pg().batch_execute("ROLLBACK").await.map(|()| Err(e)),
            };
            // Ok so that `bounded` hands the connection back; what happened is decided below.
            Ok::<_, tokio_postgres::Error>(verdict)
        })
        .await?;
    match ran {
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(Ran::Statement(e))) => Err(e.into()),
        Ok(Err(Ran::Unprepared)) => Err(StoreError::Internal(
            "a pipelined statement was not prepared".to_owned(),
        )),
        Err(e) => {
            // COMMIT or ROLLBACK failed: the session's state is unknown, keep it out of the
            // pool.
            drop(deadpool_postgres::Object::take(client));
            Err(e.into())
        }
    }
}

/// Why a run did not answer its row.
enum Ran {
    Statement(tokio_postgres::Error),
    Unprepared,
}

/// Polls `begin` and then each run once, in order (each sends its messages on that first poll,
/// so they reach PostgreSQL in this order, in one round trip), then waits for all. The runs'
/// rows in order, or the first error.
async fn pipeline<B, R>(begin: B, runs: Vec<R>) -> Result<Vec<Row>, Ran>
where
    B: Future<Output = Result<(), tokio_postgres::Error>>,
    R: Future<Output = Result<Row, Ran>>,
{
    let mut begin = pin!(maybe_done(begin));
    let mut runs: Vec<Pin<Box<MaybeDone<R>>>> =
        runs.into_iter().map(|r| Box::pin(maybe_done(r))).collect();
    poll_fn(|cx| {
        let _ = begin.as_mut().poll(cx);
        for r in &mut runs {
            let _ = r.as_mut().poll(cx);
        }
        Poll::Ready(())
    })
    .await;
    begin.as_mut().await;
    for r in &mut runs {
        r.as_mut().await;
    }
    let begun = begin.as_mut().take_output();
    let mut rows = Vec::with_capacity(runs.len());
    let mut first_error = match begun {
        Some(Ok(())) => None,
        Some(Err(e)) => Some(Ran::Statement(e)),
        None => Some(Ran::Unprepared),
    };
    for r in &mut runs {
        match r.as_mut().take_output() {
            Some(Ok(row)) => rows.push(row),
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            None => {
                first_error.get_or_insert(Ran::Unprepared);
            }
        }
    }
    match first_error {
        None => Ok(rows),
        Some(e) => Err(e),
    }
}
