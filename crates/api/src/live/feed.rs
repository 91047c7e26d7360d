//! The process's one subscriber: a pub/sub connection on the live channel (core
//! `projection/live.rs`), whose messages wake the hubs of the boards they name. It reconnects
//! with a capped back-off (core `backoff.rs`), to the next seed in cluster mode; while it is
//! down the hubs poll, and their messages say `"updates":"polling"`, so a stream is never
//! silently stale. A PING every few seconds finds a connection that died without a word
//! (a pub/sub connection otherwise only ever reads).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use ledgerboard_core::backoff::Backoff;
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::live::{self, Change};

use super::{Live, Updates};

/// Between PINGs on the subscribed connection, and how long one may take.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING_TIMEOUT: Duration = Duration::from_secs(3);

pub(super) async fn run(live: Arc<Live>, store: Store) {
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
    let mut attempt = 0usize;
    loop {
        match live::subscribe(&store, attempt).await {
            Ok((mut sink, mut messages)) => {
                backoff.reset();
                if attempt > 0 {
                    tracing::info!("live updates: subscribed again");
                }
                live.set_updates(Updates::Pubsub);
                let mut ping = tokio::time::interval(PING_EVERY);
                ping.tick().await;
                loop {
                    tokio::select! {
                        _ = live.stop.cancelled() => return,
                        message = messages.next() => match message {
                            Some(m) => match m
                                .get_payload::<String>()
                                .ok()
                                .as_deref()
                                .and_then(Change::parse)
                            {
                                Some(change) => live.wake(&change.board),
                                None => tracing::debug!("live updates: a message of another shape"),
                            },
                            None => break,
                        },
                        _ = ping.tick() => {
                            let pong = tokio::time::timeout(
                                PING_TIMEOUT,
                                sink.ping::<redis::Value>(),
                            )
                            .await;
                            if !matches!(pong, Ok(Ok(_))) {
                                break;
                            }
                        }
                    }
                }
                tracing::warn!(
                    poll = ?live.settings.poll,
                    "live updates: the pub/sub connection was lost; boards are polled until it is back"
                );
            }
            Err(e) => {
                if attempt == 0 {
                    tracing::warn!(error = %e, poll = ?live.settings.poll, "live updates: cannot subscribe; boards are polled until it can");
                } else {
                    tracing::debug!(error = %e, "live updates: cannot subscribe yet");
                }
            }
        }
        live.set_updates(Updates::Polling);
        attempt += 1;
        if !backoff.wait(&live.stop).await {
            return;
        }
    }
}
