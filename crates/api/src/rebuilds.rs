//! Asking the reconciler to rebuild a board whose projection a read found without a whole seal.
//! A read must not wait for it, and a hot board read thousands of times a second while it is
//! rebuilt must not send thousands of requests: each board is asked for at most once per
//! [`EVERY`] per process, from a task of its own, bounded by the Redis timeouts.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use ledgerboard_core::domain::BoardId;
use ledgerboard_core::projection::{Store, request_rebuild};

const EVERY: Duration = Duration::from_secs(1);
/// Boards remembered; past this the expired ones are forgotten.
const MAX_BOARDS: usize = 10_000;

#[derive(Default)]
pub struct RebuildRequests {
    last: Mutex<HashMap<BoardId, Instant>>,
}

impl RebuildRequests {
    pub fn request(&self, store: &Store, board: &BoardId) {
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if last.get(board).is_some_and(|at| at.elapsed() < EVERY) {
                return;
            }
            if last.len() >= MAX_BOARDS {
                last.retain(|_, at| at.elapsed() < EVERY);
            }
            last.insert(board.clone(), Instant::now());
        }
        let (store, board) = (store.clone(), board.clone());
        tokio::spawn(async move {
            let sent = request_rebuild(&store, &board).await;
            match sent {
                Ok(()) => tracing::info!(board = %board, "projection not whole: rebuild requested"),
                Err(e) => tracing::warn!(board = %board, error = %e, "could not request a rebuild"),
            }
        });
    }
}
