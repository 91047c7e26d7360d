//! The queue that grouped transactions share (`board/group.rs`: score commands;
//! `competition/group.rs`: entries): callers queue an item with the channel its answer comes
//! back on, and a few workers each take whatever is waiting (up to `max_size`) and run it as
//! one group. At most `workers` groups run at once, whoever runs them (one permit each).
//!
//! An item that finds a permit free and nothing queued runs at once, alone, on its caller's
//! own task: no hand-off to a worker and back, which was two task wake-ups (often across
//! threads) on every lone command's path. A caller that gives up then cancels its own
//! statement, as any query whose caller gave up. Items that arrive while every permit is
//! taken queue; a worker takes the first, waits for a permit, and leaves with everything that
//! queued meanwhile as one group.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Mutex, Semaphore, mpsc, oneshot};

use super::StoreError;

/// The queue and its workers. Cheap to clone; the workers stop once every clone is dropped
/// and the queue is empty.
pub struct GroupQueue<P> {
    queue: mpsc::Sender<P>,
    shared: Arc<Shared<P>>,
}

/// What the queue's handles and its workers share.
struct Shared<P> {
    /// One per worker: held by whoever runs a group, a worker or a caller running its own.
    permits: Semaphore,
    /// Items a worker has taken from the queue and holds while it waits for a permit.
    held: AtomicUsize,
    run: Runner<P>,
}

type Runner<P> = Box<dyn Fn(Vec<P>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

// Not derived: a derive would ask for `P: Clone`, and the items are never cloned.
impl<P> Clone for GroupQueue<P> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            shared: self.shared.clone(),
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
        let shared = Arc::new(Shared {
            permits: Semaphore::new(workers),
            held: AtomicUsize::new(0),
            run: Box::new(move |group| Box::pin(run(group))),
        });
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..workers {
            let worker = Worker {
                rx: rx.clone(),
                max_size,
                shared: shared.clone(),
            };
            tokio::spawn(worker.work());
        }
        Self { queue, shared }
    }

    /// Items waiting for a permit: queued, or taken by a worker that waits for one.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity() + self.shared.held.load(Ordering::Acquire)
    }

    /// Queues the item `make` builds around its answer's channel, and waits for the answer;
    /// `what` names the items in the errors ("the command queue has stopped").
    pub async fn ask<T>(
        &self,
        what: &str,
        make: impl FnOnce(oneshot::Sender<T>) -> P,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let item = make(reply);
        // Nothing queued and a permit free: run it here. Queued items come first (a permit
        // released while a worker waits goes to that worker, and try_acquire then fails).
        if self.queued() == 0
            && let Ok(_permit) = self.shared.permits.try_acquire()
        {
            (self.shared.run)(vec![item]).await;
        } else if self.queue.send(item).await.is_err() {
            return Err(StoreError::Unavailable(format!(
                "the {what} queue has stopped"
            )));
        }
        answer.await.map_err(|_| {
            StoreError::Internal(format!("the {what}'s group ended without an answer"))
        })
    }
}

/// One worker: the queue's receiving end, shared by every worker, and what the handles share.
struct Worker<P> {
    rx: Arc<Mutex<mpsc::Receiver<P>>>,
    max_size: usize,
    shared: Arc<Shared<P>>,
}

impl<P> Worker<P> {
    /// Takes the next item, waits for a permit, leaves with whatever queued meanwhile (up to
    /// `max_size`), runs it, and again, until the queue closes.
    async fn work(self) {
        let mut group = Vec::with_capacity(self.max_size);
        loop {
            let permit = {
                // The worker holding the lock waits for the next item and then for a permit;
                // the others wait for the lock.
                let mut rx = self.rx.lock().await;
                let Some(first) = rx.recv().await else {
                    return;
                };
                group.push(first);
                self.shared.held.fetch_add(1, Ordering::AcqRel);
                let permit = self.shared.permits.acquire().await;
                self.shared.held.fetch_sub(1, Ordering::AcqRel);
                let Ok(permit) = permit else {
                    return;
                };
                while group.len() < self.max_size {
                    match rx.try_recv() {
                        Ok(item) => group.push(item),
                        Err(_) => break,
                    }
                }
                permit
            };
            (self.shared.run)(std::mem::take(&mut group)).await;
            drop(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use super::*;

    /// Each group's items and the task that ran it; each item answers with its own value.
    type Seen = Arc<StdMutex<Vec<(Vec<u32>, Option<tokio::task::Id>)>>>;

    fn queue(
        workers: usize,
        gate: Arc<Semaphore>,
    ) -> (GroupQueue<(u32, oneshot::Sender<u32>)>, Seen) {
        let seen: Seen = Arc::default();
        let queue = GroupQueue::start(workers, 8, {
            let seen = seen.clone();
            move |group: Vec<(u32, oneshot::Sender<u32>)>| {
                let (seen, gate) = (seen.clone(), gate.clone());
                async move {
                    // Item 0 waits at the gate: it holds its permit until the test opens it.
                    if group.iter().any(|(n, _)| *n == 0) {
                        let _ = gate.acquire().await;
                    }
                    let items = group.iter().map(|(n, _)| *n).collect();
                    seen.lock()
                        .expect("seen")
                        .push((items, tokio::task::try_id()));
                    for (n, reply) in group {
                        let _ = reply.send(n);
                    }
                }
            }
        });
        (queue, seen)
    }

    #[tokio::test]
    async fn a_lone_item_runs_on_its_callers_task() {
        let (queue, seen) = queue(2, Arc::new(Semaphore::new(0)));
        let caller = tokio::spawn(async move {
            let answer = queue.ask("item", |reply| (7, reply)).await;
            (answer.expect("answer"), tokio::task::id())
        });
        let (answer, task) = caller.await.expect("caller");
        assert_eq!(answer, 7);
        assert_eq!(*seen.lock().expect("seen"), vec![(vec![7], Some(task))]);
    }

    #[tokio::test]
    async fn items_queued_while_every_permit_is_taken_leave_as_one_group() {
        let gate = Arc::new(Semaphore::new(0));
        let (queue, seen) = queue(1, gate.clone());
        // Item 0 takes the only permit and waits at the gate.
        let blocker = tokio::spawn({
            let queue = queue.clone();
            async move { queue.ask("item", |reply| (0, reply)).await }
        });
        while queue.shared.permits.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        let mut waiting = Vec::new();
        for n in 1..=3 {
            let queue_n = queue.clone();
            waiting.push(tokio::spawn(async move {
                queue_n.ask("item", |reply| (n, reply)).await
            }));
            while queue.queued() < n as usize {
                tokio::task::yield_now().await;
            }
        }
        gate.add_permits(1);
        assert_eq!(blocker.await.expect("blocker").expect("answer"), 0);
        for (n, w) in (1..=3).zip(waiting) {
            assert_eq!(w.await.expect("item").expect("answer"), n);
        }
        let groups: Vec<Vec<u32>> = seen
            .lock()
            .expect("seen")
            .iter()
            .map(|(g, _)| g.clone())
            .collect();
        assert_eq!(groups, vec![vec![0], vec![1, 2, 3]]);
        assert_eq!(queue.queued(), 0);
    }
}
