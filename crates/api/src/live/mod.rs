//! Live updates over server-sent events (`GET /v1/boards/{board}/live`, docs/api.md "Live
//! updates"): a snapshot of the board's first N on connect, then a new one whenever the board
//! changes, each with the `freshness` of the reads. This module is what the api's state holds:
//! the hubs, the streams' counts and the one subscriber; serving a stream (the route, a hub's
//! loop, one connection's stream) is `crate::sse`, which reads through the reads' own path.
//!
//! - `feed.rs`: ONE pub/sub connection per process, subscribed to the live channel the
//!   projection script publishes each changed board on (core `projection/live.rs`); it wakes
//!   the hubs of that board. While it is down the hubs poll on a slow timer, and every message
//!   says `"updates":"polling"`.
//! - `hub.rs`: one hub per board (and period, cohort and N) with streams: the `watch` that
//!   shares one read and one rendered message per change with every stream on it (10,000
//!   clients cost one read per change, not 10,000).
//! - `render.rs`: the message's shape, its id and digest, the resume rule's `Last-Event-ID`.
//!
//! Streams are bounded per process (`api.live_max_connections`, 503 `live_full`) and per
//! client (`api.live_max_per_client`, 429 `live_client_limit`); every stream ends when the
//! api stops accepting after SIGTERM ([`Live::stop_on`]).

mod feed;
pub mod hub;
pub mod render;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::StatusCode;
use ledgerboard_core::model::{BoardId, UserId};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use self::hub::{Hub, HubKey, Shared};
pub use self::render::{Resume, Updates};
use crate::client::ClientKey;
use crate::error::ApiError;
use crate::settings::ApiSettings;

/// The bounds of live updates (`api.live_*`).
#[derive(Debug, Clone, Copy)]
pub struct LiveSettings {
    pub min_interval: Duration,
    pub heartbeat: Duration,
    pub poll: Duration,
    pub max_connections: usize,
    pub max_per_client: usize,
}

impl From<&ApiSettings> for LiveSettings {
    fn from(api: &ApiSettings) -> Self {
        Self {
            min_interval: api.live_min_interval_ms.get(),
            heartbeat: api.live_heartbeat_ms.get(),
            poll: api.live_poll_ms.get(),
            max_connections: api.live_max_connections.get(),
            max_per_client: api.live_max_per_client.get(),
        }
    }
}

/// The live updates of one api process: its hubs, its one subscriber, its connection counts.
pub struct Live {
    pub(crate) settings: LiveSettings,
    /// The hubs, by declared board (a message of any period or cohort of it wakes them all;
    /// each reads its own and skips the read when its board's sequence did not move).
    hubs: Mutex<HashMap<BoardId, Vec<Arc<Hub>>>>,
    /// Whether the subscriber runs (started by the first stream).
    feed_started: AtomicBool,
    /// How hubs learn of changes now: the subscriber's state.
    pub(crate) updates: watch::Sender<Updates>,
    open: AtomicUsize,
    per_client: Mutex<HashMap<ClientKey, usize>>,
    /// Fires when the api stops accepting: every stream, hub and the subscriber end.
    pub(crate) stop: CancellationToken,
}

/// Why a stream was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `api.live_max_connections` streams are open in this process.
    Full,
    /// `api.live_max_per_client` streams are open from this client.
    PerClient,
    /// The api is shutting down.
    Draining,
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Full => ApiError::Coded(
                StatusCode::SERVICE_UNAVAILABLE,
                "live_full",
                "this api process holds api.live_max_connections live streams; retry later (or on another replica)".into(),
            ),
            Refusal::PerClient => ApiError::Coded(
                StatusCode::TOO_MANY_REQUESTS,
                "live_client_limit",
                "this client holds api.live_max_per_client live streams; close one first".into(),
            ),
            Refusal::Draining => ApiError::Unavailable("the api is shutting down".into()),
        }
    }
}

/// One open stream, counted in the process's and its client's totals until dropped.
pub struct Slot {
    live: Arc<Live>,
    client: Option<ClientKey>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.live.open.fetch_sub(1, Ordering::Relaxed);
        if let Some(key) = self.client {
            let mut per = self
                .live
                .per_client
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(n) = per.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    // Forgotten, so that many clients seen once cannot grow the table.
                    per.remove(&key);
                }
            }
        }
    }
}

/// What one stream asks for.
pub struct Request {
    pub board: BoardId,
    pub period: Option<String>,
    pub cohort: Option<u32>,
    pub top: u64,
    /// The player whose own entry and neighbourhood each message carries.
    pub player: Option<UserId>,
    pub radius: u64,
    pub resume: Option<Resume>,
}

impl Live {
    pub fn new(settings: LiveSettings) -> Self {
        Self {
            settings,
            hubs: Mutex::default(),
            feed_started: AtomicBool::new(false),
            updates: watch::Sender::new(Updates::Polling),
            open: AtomicUsize::new(0),
            per_client: Mutex::default(),
            stop: CancellationToken::new(),
        }
    }

    /// Ends every stream, hub and the subscriber when `token` fires (the api's
    /// stop-accepting token, so that the server's graceful shutdown is not held up by streams
    /// that never end, and clients reconnect to a replica that still accepts).
    pub fn stop_on(self: &Arc<Self>, token: CancellationToken) {
        let stop = self.stop.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            stop.cancel();
        });
    }

    /// Streams open now in this process.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Counts a new stream of `client` (None: a peer that is not capped), or refuses it.
    pub fn admit(self: &Arc<Self>, client: Option<ClientKey>) -> Result<Slot, Refusal> {
        if self.stop.is_cancelled() {
            return Err(Refusal::Draining);
        }
        if self.open.fetch_add(1, Ordering::Relaxed) >= self.settings.max_connections {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return Err(Refusal::Full);
        }
        // From here on the slot gives the count back when dropped, refused or not.
        let mut slot = Slot {
            live: self.clone(),
            client: None,
        };
        if let Some(key) = client {
            let mut per = self
                .per_client
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let n = per.entry(key).or_insert(0);
            if *n >= self.settings.max_per_client {
                if *n == 0 {
                    per.remove(&key);
                }
                return Err(Refusal::PerClient);
            }
            *n += 1;
            slot.client = Some(key);
        }
        Ok(slot)
    }

    /// Starts the process's one subscriber on `store`, unless it runs already.
    pub(crate) fn start_feed(self: &Arc<Self>, store: &ledgerboard_core::projection::Store) {
        if !self.feed_started.swap(true, Ordering::AcqRel) {
            tokio::spawn(feed::run(self.clone(), store.clone()));
        }
    }

    /// The hub of `key` and a receiver of its messages, taken under the registry's lock so
    /// that a hub retiring for want of streams never misses one; `true` when the hub is new
    /// (the caller starts its loop).
    pub(crate) fn hub(&self, key: HubKey) -> (Arc<Hub>, watch::Receiver<Shared>, bool) {
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        let list = hubs.entry(key.board.clone()).or_default();
        let (hub, new) = match list.iter().find(|h| h.key == key) {
            Some(h) => (h.clone(), false),
            None => {
                let h = Arc::new(Hub::new(key));
                list.push(h.clone());
                (h, true)
            }
        };
        let rx = hub.subscribe();
        (hub, rx, new)
    }

    /// Wakes the hubs of `board`'s declared board: one of its boards changed.
    fn wake(&self, board: &BoardId) {
        let hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        for hub in hubs.get(&board.base()).into_iter().flatten() {
            hub.wake();
        }
    }

    /// Tells every hub how updates arrive now (they read again: changes may have been missed).
    fn set_updates(&self, updates: Updates) {
        self.updates.send_if_modified(|now| {
            let changed = *now != updates;
            *now = updates;
            changed
        });
    }

    /// Removes `hub` if no stream holds it any more; false when one joined meanwhile.
    pub(crate) fn retire(&self, hub: &Arc<Hub>) -> bool {
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        if hub.streams() > 0 {
            return false;
        }
        if let Some(list) = hubs.get_mut(&hub.key.board) {
            list.retain(|h| !Arc::ptr_eq(h, hub));
            if list.is_empty() {
                hubs.remove(&hub.key.board);
            }
        }
        true
    }

    /// Hubs running now (one per board, period, cohort and N that has streams).
    pub fn hubs(&self) -> usize {
        self.hubs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(Vec::len)
            .sum()
    }
}
