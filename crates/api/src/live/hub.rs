//! One hub per board (and period, cohort and N) with streams: the `watch` its message is
//! shared through, and the wake-up a change of its board sends. Its loop (reading the board,
//! coalescing the changes) is `sse/hub.rs`.

use ledgerboard_core::model::BoardId;
use std::sync::Arc;
use tokio::sync::{Notify, watch};

use super::render::Snapshot;

/// What a hub reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubKey {
    /// The declared board.
    pub board: BoardId,
    pub period: Option<String>,
    pub cohort: Option<u32>,
    pub top: u64,
}

pub type Shared = Option<Arc<Snapshot>>;

pub struct Hub {
    pub key: HubKey,
    pub(crate) wake: Notify,
    pub(crate) snapshot: watch::Sender<Shared>,
}

impl Hub {
    pub fn new(key: HubKey) -> Self {
        Self {
            key,
            wake: Notify::new(),
            snapshot: watch::Sender::new(None),
        }
    }

    pub fn subscribe(&self) -> watch::Receiver<Shared> {
        self.snapshot.subscribe()
    }

    /// Streams on this hub now.
    pub fn streams(&self) -> usize {
        self.snapshot.receiver_count()
    }

    /// The board changed: read again (once, however many changes arrive before the read).
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}
