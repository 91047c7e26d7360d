//! The Redis calls of the single-reconciler lock (`<namespace>:reconciler:lock`): take it with
//! `SET NX PX`, renew and release it only while it holds our token (`lua/lock_renew.lua`,
//! `lua/lock_release.lua`). Holding it, renewing it in the background and stopping when it is
//! lost are the reconciler's (`crates/reconciler/src/lock.rs`).

use std::time::Duration;

use super::scripts::{LOCK_RELEASE, LOCK_RENEW};
use super::{ReadModelError, Store};

/// Takes the lock for `token` if it is free; `false`: someone else holds it.
pub async fn try_take(store: &Store, token: &str, ttl: Duration) -> Result<bool, ReadModelError> {
    let mut conn = store.connection().await?;
    let set: Option<String> = redis::cmd("SET")
        .arg(store.keys().reconciler_lock())
        .arg(token)
        .arg("NX")
        .arg("PX")
        .arg(ttl.as_millis() as u64)
        .query_async(&mut conn)
        .await?;
    Ok(set.is_some())
}

/// Extends the lock to `ttl` if it still holds `token`; `false`: it is not ours any more.
pub async fn renew(store: &Store, token: &str, ttl: Duration) -> Result<bool, ReadModelError> {
    let mut conn = store.connection().await?;
    let renewed: i64 = LOCK_RENEW
        .key(store.keys().reconciler_lock())
        .arg(token)
        .arg(ttl.as_millis() as u64)
        .invoke_async(&mut conn)
        .await?;
    Ok(renewed == 1)
}

/// Deletes the lock if it still holds `token`.
pub async fn release(store: &Store, token: &str) -> Result<(), ReadModelError> {
    let mut conn = store.connection().await?;
    let _: i64 = LOCK_RELEASE
        .key(store.keys().reconciler_lock())
        .arg(token)
        .invoke_async(&mut conn)
        .await?;
    Ok(())
}
