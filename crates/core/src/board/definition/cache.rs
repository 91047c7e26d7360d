//! The api's short-lived cache of definitions. A command carries the revision it was
//! validated against and its statement refuses any other, so a cached definition can be late
//! but never applied wrongly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::store::get;
use super::types::BoardDefinition;
use crate::db::{Database, StoreError};
use crate::model::BoardId;

/// Boards cached at most; past it the cache starts over (a game has tens of boards, an
/// attacker naming random boards must not grow memory).
const MAX_CACHED: usize = 10_000;

/// The api's cache of definitions: each is re-read after `ttl`, and at once after a command's
/// statement said its revision is not the board's any more ([`Definitions::forget`]).
pub struct Definitions {
    ttl: Duration,
    cached: Mutex<HashMap<BoardId, (Instant, Arc<BoardDefinition>)>>,
}

impl Definitions {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            cached: Mutex::new(HashMap::new()),
        }
    }

    pub async fn get(
        &self,
        db: &Database,
        board: &BoardId,
    ) -> Result<Arc<BoardDefinition>, StoreError> {
        if let Some(hit) = self.fresh(board) {
            return Ok(hit);
        }
        let def = Arc::new(get(db, board).await?);
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if cached.len() >= MAX_CACHED {
            cached.clear();
        }
        cached.insert(board.clone(), (Instant::now(), def.clone()));
        Ok(def)
    }

    fn fresh(&self, board: &BoardId) -> Option<Arc<BoardDefinition>> {
        let cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached
            .get(board)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, def)| def.clone())
    }

    /// The board's definition as last read, however old (None if never read, or dropped):
    /// for reads that may answer without PostgreSQL (`consistency=eventual`) while it cannot
    /// state the definition.
    pub fn last_known(&self, board: &BoardId) -> Option<Arc<BoardDefinition>> {
        let cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached.get(board).map(|(_, def)| def.clone())
    }

    /// Drops the board's entry: the next [`Definitions::get`] reads PostgreSQL.
    pub fn forget(&self, board: &BoardId) {
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached.remove(board);
    }
}
