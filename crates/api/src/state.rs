use std::sync::Arc;

use ledgerboard_core::auth::TokenTable;
use ledgerboard_core::config::{ApiSettings, DatabaseSettings, ReadAccess, Settings};
use ledgerboard_core::db::Database;
use ledgerboard_core::projection::Store;

use crate::coalesce::TopReads;
use crate::freshness::FreshnessCache;
use crate::guard::Limiter;
use crate::rebuilds::RebuildRequests;

/// What every handler can reach. Cheap to clone (pools and caches are shared).
#[derive(Clone)]
pub struct AppState {
    /// Commands only: reads can never take the connections a command needs.
    pub db: Database,
    /// Reads from PostgreSQL (strong reads, fallbacks) and the lag measurement, in a pool of
    /// their own (`api.read_pool_max_size`).
    pub read_db: Database,
    pub cache: Store,
    pub freshness: Arc<FreshnessCache>,
    pub settings: Arc<ApiSettings>,
    /// The tokens of `auth.tokens`, and whether reads need one.
    pub tokens: Arc<TokenTable>,
    pub reads: ReadAccess,
    pub limiter: Option<Arc<Limiter>>,
    /// Top reads in flight, shared by identical requests.
    pub top_reads: Arc<TopReads>,
    /// Rebuilds asked for by reads that found a board's projection not whole.
    pub rebuilds: Arc<RebuildRequests>,
}

impl AppState {
    /// `settings` were validated when loaded, so `auth.tokens` parses; should it not, no
    /// token is accepted (every write is refused) rather than any.
    ///
    /// The read pool is built here, from `settings.database` with `api.read_pool_max_size`
    /// connections, opened on first use.
    pub fn new(db: Database, cache: Store, settings: &Settings) -> Self {
        let api = &settings.api;
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
        Self {
            db,
            read_db,
            cache,
            freshness: Arc::new(FreshnessCache::new(api.freshness_cache())),
            settings: Arc::new(api.clone()),
            tokens: Arc::new(TokenTable::parse(&settings.auth.tokens).unwrap_or_default()),
            reads: settings.auth.reads,
            limiter: Limiter::new(api.rate_limit_per_s, api.rate_limit_burst).map(Arc::new),
            top_reads: Arc::default(),
            rebuilds: Arc::default(),
        }
    }
}
