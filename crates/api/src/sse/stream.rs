//! One connection's stream: the hub's messages, with the player's own part when the stream
//! has a player, a heartbeat comment when nothing was sent for `api.live_heartbeat_ms`, and
//! its end when the api stops.
//!
//! A stream without a player sends the hub's frame as it is (shared bytes: no copy, no
//! rendering per connection). A player's stream reads its own entry and neighbourhood once per
//! hub message (so at most once per `api.live_min_interval_ms`, however many changes), and
//! only when the board moved since its last read; the rest of the message is the hub's.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use futures_util::Stream;
use ledgerboard_core::model::UserId;
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::route::around_page;
use crate::live::hub::{Hub, Shared};
use crate::live::render::{HEARTBEAT, LiveMe, Snapshot, digest, frame};
use crate::live::{LiveSettings, Request, Slot};
use crate::state::AppState;

/// The player's part as last read: for which sequence and board, its JSON and digest.
struct Own {
    sequence: i64,
    target: ledgerboard_core::model::BoardId,
    json: String,
    digest: u64,
}

pub(super) struct Conn {
    state: AppState,
    rx: watch::Receiver<Shared>,
    player: Option<UserId>,
    radius: u64,
    /// The digest of the last message sent (or the one a resumed client named).
    sent: Option<u64>,
    own: Option<Own>,
    heartbeat: Interval,
    stop: CancellationToken,
    /// Counted until the stream ends; the hub is held so it lives while its streams do.
    _slot: Slot,
    _hub: Arc<Hub>,
}

impl Conn {
    pub fn new(
        state: AppState,
        settings: LiveSettings,
        hub: Arc<Hub>,
        mut rx: watch::Receiver<Shared>,
        request: Request,
        stop: CancellationToken,
        slot: Slot,
    ) -> Self {
        // The hub's message now, if it has one, is this stream's first.
        rx.mark_changed();
        let every = settings.heartbeat;
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self {
            state,
            rx,
            player: request.player,
            radius: request.radius,
            sent: request.resume.map(|r| r.digest),
            own: None,
            heartbeat,
            stop,
            _slot: slot,
            _hub: hub,
        }
    }

    /// The next bytes to send; None when the stream ends.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            let snapshot = tokio::select! {
                biased;
                _ = self.stop.cancelled() => return None,
                changed = self.rx.changed() => {
                    // The hub is gone (the api stops).
                    changed.ok()?;
                    self.rx.borrow_and_update().clone()
                }
                _ = self.heartbeat.tick() => return Some(Bytes::from_static(HEARTBEAT)),
            };
            let Some(snapshot) = snapshot else { continue };
            if let Some(frame) = self.message(&snapshot).await {
                self.heartbeat.reset();
                return Some(frame);
            }
        }
    }

    /// The message for `snapshot`, or None when it says nothing new to this client.
    async fn message(&mut self, snapshot: &Snapshot) -> Option<Bytes> {
        let Some(user) = self.player.clone() else {
            if self.sent == Some(snapshot.digest) {
                return None;
            }
            self.sent = Some(snapshot.digest);
            return Some(snapshot.frame.clone());
        };
        let fresh = self
            .own
            .as_ref()
            .is_some_and(|o| o.sequence == snapshot.sequence && o.target == snapshot.target);
        if !fresh {
            // A failed read keeps the last part read (or none yet): the freshness of the
            // message still says how the board was read.
            if let Some(json) = self.read_own(snapshot, &user).await {
                let own_digest = digest(&[json.as_bytes()]);
                self.own = Some(Own {
                    sequence: snapshot.sequence,
                    target: snapshot.target.clone(),
                    json,
                    digest: own_digest,
                });
            }
        }
        let own = self.own.as_ref()?;
        let combined = digest(&[&snapshot.digest.to_be_bytes(), &own.digest.to_be_bytes()]);
        if self.sent == Some(combined) {
            return None;
        }
        self.sent = Some(combined);
        Some(frame(
            snapshot.sequence,
            combined,
            &[&snapshot.head, ",\"me\":", &own.json, &snapshot.tail],
        ))
    }

    async fn read_own(&self, snapshot: &Snapshot, user: &UserId) -> Option<String> {
        let page = match around_page(&self.state, snapshot, user, self.radius).await {
            Ok(page) => page,
            Err(e) => {
                tracing::debug!(error = ?e, "live: the player's part cannot be read");
                return None;
            }
        };
        let around = page.as_ref().map_or(&[][..], |p| &p.entries[..]);
        let me = LiveMe {
            entry: around.iter().find(|e| e.user_id == user.as_str()),
            around,
        };
        serde_json::to_string(&me).ok()
    }
}

/// The stream of `conn`, as the response body takes it.
pub(super) fn body(conn: Conn) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    futures_util::stream::unfold(conn, |mut conn| async move {
        let bytes = conn.next().await?;
        Some((Ok(bytes), conn))
    })
}
