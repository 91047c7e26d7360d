//! Asking the reconciler to rebuild a board whose projection a read found without a whole seal.
//! A read must not wait for it, and a hot board read thousands of times a second while it is
//! rebuilt must not send thousands of requests: each board is asked for at most once per
//! [`EVERY`] per process, from a task of its own, bounded by the Redis timeouts.
//!
//! What is throttled is the sending, never an observation: a read that finds the board not
//! whole within [`EVERY`] of the last ask schedules one more ask at the end of the window
//! (unless one is scheduled already), so every such read is followed by a request that
//! reaches Redis after it. Dropping those reads instead lost a board broken again right after
//! its rebuild: the rebuild had served the earlier ask, and nobody asked again until a read
//! came more than a second later (lbchaos: a board deleted after the drain and read once,
//! "still not whole (Missing) 30s after the read").

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::{Store, request_rebuild};

/// At most one ask per board per this long, per process; the reconciler looks at the requests
/// every 250 ms, so a shorter window would only add requests.
const EVERY: Duration = Duration::from_millis(250);
/// Boards remembered; past this the expired ones are forgotten.
const MAX_BOARDS: usize = 10_000;

#[derive(Clone, Copy)]
struct Asks {
    /// When the last ask was sent (or scheduled to be).
    sent: Instant,
    /// An ask is scheduled for the end of the window: it covers every later observation.
    trailing: bool,
}

#[derive(Default)]
pub struct RebuildRequests {
    boards: Arc<Mutex<HashMap<BoardId, Asks>>>,
}

impl RebuildRequests {
    pub fn request(&self, store: &Store, board: &BoardId) {
        let delay = {
            let mut boards = self.boards.lock().unwrap_or_else(PoisonError::into_inner);
            if boards.len() >= MAX_BOARDS && !boards.contains_key(board) {
                boards.retain(|_, a| a.trailing || a.sent.elapsed() < EVERY);
            }
            match boards.get_mut(board) {
                // The scheduled ask is sent after this observation: nothing to add.
                Some(a) if a.trailing => return,
                Some(a) if a.sent.elapsed() < EVERY => {
                    a.trailing = true;
                    EVERY.saturating_sub(a.sent.elapsed())
                }
                _ => {
                    boards.insert(
                        board.clone(),
                        Asks {
                            sent: Instant::now(),
                            trailing: false,
                        },
                    );
                    Duration::ZERO
                }
            }
        };
        let (store, board, boards) = (store.clone(), board.clone(), self.boards.clone());
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
                // From here a new observation opens a new window (and may schedule another
                // trailing ask), since this ask may already have been served when it comes.
                boards
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(
                        board.clone(),
                        Asks {
                            sent: Instant::now(),
                            trailing: false,
                        },
                    );
            }
            match request_rebuild(&store, &board).await {
                Ok(()) => tracing::info!(board = %board, "projection not whole: rebuild requested"),
                Err(e) => tracing::warn!(board = %board, error = %e, "could not request a rebuild"),
            }
        });
    }
}
