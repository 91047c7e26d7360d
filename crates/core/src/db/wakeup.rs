//! Wakes idle projectors after commands commit, with at most one NOTIFY per
//! [`MIN_INTERVAL`] per process however many commands commit.
//!
//! The NOTIFY used to run inside the command statement, where PostgreSQL's notification lock
//! serialized every command's durable commit (about a third of the throughput without it, see
//! docs/performance.md). Now the command only pokes this task; the task sends the NOTIFY in a
//! transaction of its own (`sql/outbox/wakeup.sql`, one prepared statement). A wake-up is a
//! hint: when one is lost (the task failed, the process died after the commit) the projectors'
//! poll interval still bounds the delay, and nothing in the outbox is lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::Notify;

use super::bounds::Bounds;
use super::metrics::Op;
use super::statement::{Statement, Statements};

/// The channel the wake-up notifies and the projectors listen on.
pub const OUTBOX_CHANNEL: &str = "ledgerboard_outbox";
/// The NOTIFY on [`OUTBOX_CHANNEL`] in a transaction of its own that does not wait for the WAL
/// flush.
static WAKEUP: Statement<0> = Statement::new(Op::Wakeup, include_str!("sql/outbox/wakeup.sql"), []);

/// The least time between two NOTIFYs from one process: under load, pokes that arrive in the
/// meantime are served by one notification (the projectors claim everything pending anyway).
pub const MIN_INTERVAL: Duration = Duration::from_millis(2);
/// After a failed NOTIFY: the database is likely down, and commands fail too.
const RETRY_AFTER: Duration = Duration::from_secs(1);

struct Shared {
    poke: Notify,
    closed: AtomicBool,
}

/// Owned by [`super::Database`]: the task starts on the first poke and stops when the last
/// clone of the database is dropped.
pub(super) struct Wakeup {
    shared: Arc<Shared>,
    task: OnceLock<()>,
    /// What the task sends its NOTIFYs with, handed to it when it starts.
    pool: Pool,
    statements: Statements,
    bounds: Bounds,
}

impl Wakeup {
    pub(super) fn new(pool: Pool, statements: Statements, bounds: Bounds) -> Self {
        Self {
            shared: Arc::new(Shared {
                poke: Notify::new(),
                closed: AtomicBool::new(false),
            }),
            task: OnceLock::new(),
            pool,
            statements,
            bounds,
        }
    }

    /// Asks for a NOTIFY soon; returns at once. Must run inside a Tokio runtime.
    pub(super) fn poke(&self) {
        self.task.get_or_init(|| {
            tokio::spawn(run(
                self.pool.clone(),
                self.statements,
                self.shared.clone(),
                self.bounds.clone(),
            ));
        });
        // Stores one permit if the task is busy: any number of pokes make one more NOTIFY.
        self.shared.poke.notify_one();
    }
}

impl Drop for Wakeup {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.poke.notify_one();
    }
}

async fn run(pool: Pool, statements: Statements, shared: Arc<Shared>, bounds: Bounds) {
    loop {
        shared.poke.notified().await;
        if shared.closed.load(Ordering::Acquire) {
            return;
        }
        // The pool's own bounds limit the wait for a connection; the NOTIFY is bounded as
        // every call through the database is: a NOTIFY that gets no answer in time is
        // cancelled and its connection kept out of the pool, where the next command would
        // otherwise queue behind it (and a late cancel would hit that command).
        let sent = async {
            let client = pool.get().await.map_err(|e| e.to_string())?;
            bounds
                .run(Op::Wakeup, client, async |c| {
                    statements.execute_untimed(c, &WAKEUP, []).await
                })
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        }
        .await;
        match sent {
            Ok(()) => tokio::time::sleep(MIN_INTERVAL).await,
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "could not wake the projectors; they will claim at their next poll"
                );
                tokio::time::sleep(RETRY_AFTER).await;
            }
        }
    }
}
