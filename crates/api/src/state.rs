use std::sync::Arc;

use ledgerboard_core::auth::TokenTable;
use ledgerboard_core::cache::Cache;
use ledgerboard_core::config::{ApiSettings, ReadAccess, Settings};
use ledgerboard_core::db::Database;

use crate::coalesce::TopReads;
use crate::freshness::FreshnessCache;
use crate::guard::Limiter;

/// What every handler can reach. Cheap to clone (pools and caches are shared).
#[derive(Clone)]
pub struct AppState {
    pub db: Database,
    pub cache: Cache,
    pub freshness: Arc<FreshnessCache>,
    pub settings: Arc<ApiSettings>,
    /// The tokens of `auth.tokens`, and whether reads need one.
    pub tokens: Arc<TokenTable>,
    pub reads: ReadAccess,
    pub limiter: Option<Arc<Limiter>>,
    /// Top reads in flight, shared by identical requests.
    pub top_reads: Arc<TopReads>,
}

impl AppState {
    /// `settings` were validated when loaded, so `auth.tokens` parses; should it not, no
    /// token is accepted (every write is refused) rather than any.
    pub fn new(db: Database, cache: Cache, settings: &Settings) -> Self {
        let api = &settings.api;
        Self {
            db,
            cache,
            freshness: Arc::new(FreshnessCache::new(api.freshness_cache())),
            settings: Arc::new(api.clone()),
            tokens: Arc::new(TokenTable::parse(&settings.auth.tokens).unwrap_or_default()),
            reads: settings.auth.reads,
            limiter: Limiter::new(api.rate_limit_per_s, api.rate_limit_burst).map(Arc::new),
            top_reads: Arc::default(),
        }
    }
}
