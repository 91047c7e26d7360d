//! Leases this process may hold with no task working them, given back once PostgreSQL answers
//! again rather than left to run out (`dispatcher.lease_ms`, a minute by default):
//!
//! - a claim whose answer was lost: its statement committed, but the answer never came back
//!   (PostgreSQL restarted, or the round trip's bound ran out, after the commit). Whatever it
//!   leased is given back by its holder, which no other claim shares;
//! - a lane whose giving back failed at the end of its turn (PostgreSQL away just then).
//!
//! An entry older than the lease is dropped: by then the lease has run out anyway.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::webhook::lane::{self, Claimed};

#[derive(Default)]
pub struct Unsettled {
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// Holders of claims whose answer was lost.
    claims: Vec<(String, Instant)>,
    /// Lanes not given back after their turn.
    lanes: Vec<(Claimed, Instant)>,
}

impl Held {
    fn is_empty(&self) -> bool {
        self.claims.is_empty() && self.lanes.is_empty()
    }
}

impl Unsettled {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The claim `holder` failed: it may have committed all the same.
    pub fn claim_lost(&self, holder: String) {
        self.held().claims.push((holder, Instant::now()));
    }

    /// `lane`'s turn is over but it could not be given back.
    pub fn lane_kept(&self, lane: Claimed) {
        self.held().lanes.push((lane, Instant::now()));
    }

    /// Gives back what is held (whatever is left, on an error, is tried the next time).
    pub async fn settle(&self, db: &Database, lease: Duration) -> Result<(), StoreError> {
        let Held { claims, mut lanes } = {
            let mut held = self.held();
            held.claims.retain(|(_, at)| at.elapsed() < lease);
            held.lanes.retain(|(_, at)| at.elapsed() < lease);
            if held.is_empty() {
                return Ok(());
            }
            std::mem::take(&mut *held)
        };
        if !claims.is_empty() {
            let holders: Vec<String> = claims.iter().map(|(h, _)| h.clone()).collect();
            match lane::give_back(db, &holders).await {
                Ok(n) => tracing::info!(
                    claims = holders.len(),
                    leases = n,
                    "claims whose answer was lost: what they leased is given back"
                ),
                Err(e) => {
                    let mut held = self.held();
                    held.claims.extend(claims);
                    held.lanes.extend(lanes);
                    return Err(e);
                }
            }
        }
        while let Some((lane, at)) = lanes.pop() {
            if let Err(e) = lane::release(db, &lane).await {
                let mut held = self.held();
                held.lanes.push((lane, at));
                held.lanes.extend(lanes);
                return Err(e);
            }
        }
        Ok(())
    }
}
