//! The single-reconciler lock: `SET key token NX PX ttl` in Redis, renewed by
//! compare-and-renew and released by compare-and-release, so a replica can only extend or
//! delete its own lock. Not getting it is the normal case for a standby replica.
//!
//! A lock can be lost (it expired while Redis or this process stalled, or someone deleted it).
//! The holder learns it from a failed renewal; `confirm` asks Redis directly, and a pass calls
//! it before every chunk of repairs, so a lost lock stops the repairs at once.
//!
//! The Redis calls themselves are `ledgerboard_core::projection::lock`; this file holds the
//! token, the renewal schedule and when to count the lock as lost.

use std::time::{Duration, Instant};

use ledgerboard_core::projection::{self, ReadModelError, Store};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct HeldLock {
    store: Store,
    token: String,
    ttl: Duration,
    lost: CancellationToken,
    renewer: JoinHandle<()>,
}

/// Takes the lock if it is free. `Ok(None)`: another reconciler holds it.
pub async fn try_acquire(
    store: &Store,
    ttl: Duration,
    renew_every: Duration,
) -> Result<Option<HeldLock>, ReadModelError> {
    let token = ledgerboard_core::ids::holder_token("reconciler");
    if !projection::lock::try_take(store, &token, ttl).await? {
        return Ok(None);
    }
    let lost = CancellationToken::new();
    let renewer = tokio::spawn(renew_loop(
        store.clone(),
        token.clone(),
        ttl,
        renew_every,
        lost.clone(),
    ));
    Ok(Some(HeldLock {
        store: store.clone(),
        token,
        ttl,
        lost,
        renewer,
    }))
}

async fn renew_loop(
    store: Store,
    token: String,
    ttl: Duration,
    every: Duration,
    lost: CancellationToken,
) {
    let mut last_renewed = Instant::now();
    loop {
        tokio::select! {
            _ = lost.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        match projection::lock::renew(&store, &token, ttl).await {
            Ok(true) => last_renewed = Instant::now(),
            Ok(false) => {
                tracing::warn!("reconciler lock lost: another owner or expired");
                lost.cancel();
                return;
            }
            // Without a renewal the lock may already have expired: past the point where it
            // could have, stop acting as its holder.
            Err(e) if last_renewed.elapsed() + every >= ttl => {
                tracing::warn!(error = %e, "reconciler lock could not be renewed before its TTL; treating it as lost");
                lost.cancel();
                return;
            }
            Err(e) => tracing::warn!(error = %e, "reconciler lock renewal failed; retrying"),
        }
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        // Dropped without `release` (a pass abandoned at shutdown): stop renewing, and let
        // the lock expire by itself.
        self.renewer.abort();
    }
}

impl HeldLock {
    /// Renews the lock now and says whether it is still ours. Any doubt counts as lost.
    pub async fn confirm(&self) -> bool {
        if self.lost.is_cancelled() {
            return false;
        }
        match projection::lock::renew(&self.store, &self.token, self.ttl).await {
            Ok(true) => true,
            Ok(false) | Err(_) => {
                self.lost.cancel();
                false
            }
        }
    }

    /// Deletes the lock if it is still ours.
    pub async fn release(self) {
        self.renewer.abort();
        // Even when a renewal failed and the lock counts as lost, the key may still be ours
        // (the renewal timed out, Redis answered later): the release compares the token, so it
        // deletes only our own lock, and a standby need not wait out the TTL.
        if let Err(e) = projection::lock::release(&self.store, &self.token).await {
            tracing::warn!(error = %e, "could not release the reconciler lock; it expires by itself");
        }
    }
}
