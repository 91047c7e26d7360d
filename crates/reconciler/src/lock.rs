//! The single-reconciler lock: `SET key token NX PX ttl` in Redis, renewed by
//! compare-and-renew and released by compare-and-release, so a replica can only extend or
//! delete its own lock. Not getting it is the normal case for a standby replica.
//!
//! A lock can be lost (it expired while Redis or this process stalled, or someone deleted it).
//! The holder learns it from a failed renewal; `confirm` asks Redis directly, and a pass calls
//! it before every chunk of repairs, so a lost lock stops the repairs at once.

use std::time::{Duration, Instant};

use ledgerboard_core::cache::{Cache, CacheError};
use ledgerboard_core::scripts::{LOCK_RELEASE, LOCK_RENEW};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct HeldLock {
    cache: Cache,
    key: String,
    token: String,
    ttl: Duration,
    lost: CancellationToken,
    renewer: JoinHandle<()>,
}

/// Takes the lock if it is free. `Ok(None)`: another reconciler holds it.
pub async fn try_acquire(
    cache: &Cache,
    ttl: Duration,
    renew_every: Duration,
) -> Result<Option<HeldLock>, CacheError> {
    let key = cache.keys().reconciler_lock();
    let token = ledgerboard_core::ids::holder_token("reconciler");
    let mut conn = cache.connection().await?;
    let set: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(&token)
        .arg("NX")
        .arg("PX")
        .arg(ttl.as_millis() as u64)
        .query_async(&mut conn)
        .await?;
    if set.is_none() {
        return Ok(None);
    }
    let lost = CancellationToken::new();
    let renewer = tokio::spawn(renew_loop(
        cache.clone(),
        key.clone(),
        token.clone(),
        ttl,
        renew_every,
        lost.clone(),
    ));
    Ok(Some(HeldLock {
        cache: cache.clone(),
        key,
        token,
        ttl,
        lost,
        renewer,
    }))
}

async fn renew(cache: &Cache, key: &str, token: &str, ttl: Duration) -> Result<bool, CacheError> {
    let mut conn = cache.connection().await?;
    let renewed: i64 = LOCK_RENEW
        .key(key)
        .arg(token)
        .arg(ttl.as_millis() as u64)
        .invoke_async(&mut conn)
        .await?;
    Ok(renewed == 1)
}

async fn renew_loop(
    cache: Cache,
    key: String,
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
        match renew(&cache, &key, &token, ttl).await {
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
        match renew(&self.cache, &self.key, &self.token, self.ttl).await {
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
        let released = async {
            let mut conn = self.cache.connection().await?;
            let _: i64 = LOCK_RELEASE
                .key(&self.key)
                .arg(&self.token)
                .invoke_async(&mut conn)
                .await?;
            Ok::<_, CacheError>(())
        };
        if let Err(e) = released.await {
            tracing::warn!(error = %e, "could not release the reconciler lock; it expires by itself");
        }
    }
}
