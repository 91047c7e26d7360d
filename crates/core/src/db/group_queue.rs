//! The queue that grouped transactions share (`board/group.rs`: score commands;
//! `competition/group.rs`: entries): callers queue an item with the channel its answer comes
//! back on, and a few workers each take whatever is waiting (up to `max_size`) and run it as
//! one group. An item that finds a worker idle goes at once, alone (no added latency at low
//! load); items that arrive while every worker is busy leave together when one frees up.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{Mutex, mpsc, oneshot};

use super::StoreError;

/// The queue and its workers. Cheap to clone; the workers stop once every clone is dropped
/// and the queue is empty.
pub struct GroupQueue<P> {
    queue: mpsc::Sender<P>,
}

impl<P> Clone for GroupQueue<P> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

impl<P: Send + 'static> GroupQueue<P> {
    /// Starts `workers` workers (at least 1), each taking groups of at most `max_size` items
    /// (at least 1: every item alone) and handing each group to `run`. Must be called within a
    /// Tokio runtime.
    pub fn start<R, F>(workers: usize, max_size: usize, run: R) -> Self
    where
        R: Fn(Vec<P>) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let (workers, max_size) = (workers.max(1), max_size.max(1));
        // Room for every worker's next group; past that an item waits for room (its request
        // is bounded by the api's own timeout).
        let (queue, rx) = mpsc::channel(workers * max_size);
        let rx = Arc::new(Mutex::new(rx));
        let run = Arc::new(run);
        for _ in 0..workers {
            tokio::spawn(work(rx.clone(), max_size, run.clone()));
        }
        Self { queue }
    }

    /// Items waiting for a worker.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// Queues the item `make` builds around its answer's channel, and waits for the answer;
    /// `what` names the items in the errors ("the command queue has stopped").
    pub async fn ask<T>(
        &self,
        what: &str,
        make: impl FnOnce(oneshot::Sender<T>) -> P,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        if self.queue.send(make(reply)).await.is_err() {
            return Err(StoreError::Unavailable(format!(
                "the {what} queue has stopped"
            )));
        }
        answer.await.map_err(|_| {
            StoreError::Internal(format!("the {what}'s group ended without an answer"))
        })
    }
}

/// One worker: takes what is waiting, runs it, and again, until the queue closes.
async fn work<P, R, F>(rx: Arc<Mutex<mpsc::Receiver<P>>>, max_size: usize, run: Arc<R>)
where
    R: Fn(Vec<P>) -> F,
    F: Future<Output = ()>,
{
    let mut group = Vec::with_capacity(max_size);
    loop {
        {
            // The worker holding the lock waits for the next item; the others wait for the
            // lock. Whatever queued meanwhile leaves with that item.
            let mut rx = rx.lock().await;
            if rx.recv_many(&mut group, max_size).await == 0 {
                return;
            }
        }
        run(std::mem::take(&mut group)).await;
    }
}
