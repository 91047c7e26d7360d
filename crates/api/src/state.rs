use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use axum::extract::FromRef;
use ledgerboard_core::board::definition::Definitions;
use ledgerboard_core::board::group::CommandGroups;
use ledgerboard_core::board::periods::PeriodCache;
use ledgerboard_core::competition::EntryGroups;
use ledgerboard_core::config::{self, Count, DatabaseSettings, Holds};
use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::events::sequence::{self, Upkeep};
use ledgerboard_core::projection::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::Auth;
use crate::coalesce::TopReads;
use crate::freshness::FreshnessCache;
use crate::live::{Live, LiveSettings};
use crate::rebuilds::RebuildRequests;
use crate::settings::{ApiSettings, Sections};

/// What every handler can reach: one `Arc`, because axum clones the state for every request
/// (cloning the fields themselves, two pools with their URLs among them, was 6% of the CPU of
/// a `users/{id}` read in the bench's profile).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The state's fields, shared by every clone of [`AppState`].
pub struct Shared {
    /// Commands only: reads can never take the connections a command needs.
    pub db: Database,
    /// Score commands on their way to `db`, committed in groups (`api.command_group_*`).
    pub commands: CommandGroups,
    /// Competition entries on their way to `db`, committed in groups as commands are (one
    /// worker: a run's entries take its row lock one after the other anyway; groups of at most
    /// `api.command_group_max`).
    pub entries: EntryGroups,
    /// Reads from PostgreSQL (strong reads, fallbacks) and the lag measurement, in a pool of
    /// their own (`api.read_pool_max_size`).
    pub read_db: Database,
    pub store: Store,
    pub freshness: Arc<FreshnessCache>,
    pub settings: Arc<ApiSettings>,
    /// The tokens of `auth.tokens`, whether reads need one, and the rate limit: all the guard
    /// reads (see the `FromRef` below).
    pub auth: Auth,
    /// Top reads in flight, shared by identical requests.
    pub top_reads: Arc<TopReads>,
    /// Rebuilds asked for by reads that found a board's projection not whole.
    pub rebuilds: Arc<RebuildRequests>,
    /// Board definitions, each kept `api.definition_cache_ms`; `PUT /v1/boards/{board}`
    /// forgets the board's, and so does a command refused for another revision.
    pub definitions: Arc<Definitions>,
    /// Each board's current and previous period, kept as long as a definition and never past
    /// the current period's scheduled end; `POST /v1/boards/{board}/reset` and `PUT` forget it.
    pub periods: Arc<PeriodCache>,
    /// Live updates (`GET /v1/boards/{board}/live`): the hubs, the one pub/sub subscriber and
    /// the streams' counts (`crate::live`).
    pub live: Arc<Live>,
    /// The event log's last position as this process's upkeep last read it
    /// ([`AppState::start_event_upkeep`]): every long poll of `GET /v1/events` waits on this
    /// one watch (`subscribe`), so waiting costs no query until the log moves.
    pub event_head: watch::Sender<i64>,
    /// Long polls of the feed waiting now (each counts itself while it waits, and stops
    /// counting when it ends or its client goes away).
    pub events_waiting: AtomicUsize,
}

impl AppState {
    /// `settings` may hold other daemons' sections too (tests running several in one process).
    ///
    /// The read pool is built here, from `settings.database` with `api.read_pool_max_size`
    /// connections, opened on first use.
    pub fn new<D: Holds<Sections>>(
        db: Database,
        store: Store,
        settings: &config::Settings<D>,
    ) -> Self {
        let own: Sections = settings.daemon.section();
        let api = &own.api;
        let reads = DatabaseSettings {
            pool_max_size: api.read_pool_max_size,
            ..settings.database.clone()
        };
        // The same settings built `db` already, so this cannot fail but for a bug; sharing the
        // command pool then keeps the api serving.
        let read_db = Database::connect(&reads, "ledgerboard-api-reads").unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot build the read pool; reads share the command pool");
            db.clone()
        });
        // Each worker holds a command connection while its group runs: at most one fewer than
        // the pool holds, so the rest (a failed group's commands alone, the projectors'
        // wake-up) always find one. Clamped rather than refused, so that a settings file
        // written for a release without grouped commits still starts.
        let configured = api.command_group_workers.get();
        let workers = configured.min(
            settings
                .database
                .pool_max_size
                .get()
                .saturating_sub(1)
                .max(1),
        );
        if workers < configured {
            tracing::warn!(
                configured,
                workers,
                "api.command_group_workers is not below database.pool_max_size: fewer workers run"
            );
        }
        let commands = CommandGroups::start(db.clone(), workers, api.command_group_max.get());
        let entries = EntryGroups::start(db.clone(), 1, api.command_group_max.get());
        Self(Arc::new(Shared {
            db,
            commands,
            entries,
            read_db,
            store,
            freshness: Arc::new(FreshnessCache::new(api.freshness_cache())),
            settings: Arc::new(api.clone()),
            auth: Auth::new(&own),
            top_reads: Arc::default(),
            rebuilds: Arc::default(),
            definitions: Arc::new(Definitions::new(api.definition_cache())),
            periods: Arc::new(PeriodCache::new(api.definition_cache())),
            live: Arc::new(Live::new(LiveSettings::from(api))),
            event_head: watch::Sender::new(0),
            events_waiting: AtomicUsize::new(0),
        }))
    }

    /// Runs the event log's upkeep in this process until `stop` (core `events::sequence`:
    /// committed events get their positions, retention deletes old ones), on a pool of one
    /// connection of its own, so that neither commands nor reads wait for it. After each turn
    /// it sets [`Shared::event_head`], which wakes the feed's long polls. Any number of
    /// processes may run it (a lock makes it one turn at a time); the api always does, so that
    /// the log moves even where no dispatcher runs.
    pub fn start_event_upkeep<D>(
        &self,
        settings: &config::Settings<D>,
        stop: CancellationToken,
    ) -> Result<JoinHandle<()>, StoreError> {
        let db = Database::connect(
            &DatabaseSettings {
                pool_max_size: const { Count::of(1) },
                ..settings.database.clone()
            },
            "ledgerboard-api-events",
        )?;
        Ok(tokio::spawn(sequence::upkeep(
            db,
            Upkeep::from(&settings.events),
            stop,
            self.event_head.clone(),
        )))
    }
}

/// The guard's substate: the auth middleware reads this and nothing else of the state.
impl FromRef<AppState> for Auth {
    fn from_ref(state: &AppState) -> Self {
        state.auth.clone()
    }
}
