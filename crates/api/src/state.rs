use std::sync::Arc;

use ledgerboard_core::cache::Cache;
use ledgerboard_core::config::ApiSettings;
use ledgerboard_core::db::Database;

use crate::freshness::FreshnessCache;

/// What every handler can reach. Cheap to clone (pools and caches are shared).
#[derive(Clone)]
pub struct AppState {
    pub db: Database,
    pub cache: Cache,
    pub freshness: Arc<FreshnessCache>,
    pub settings: Arc<ApiSettings>,
}

impl AppState {
    pub fn new(db: Database, cache: Cache, settings: &ApiSettings) -> Self {
        Self {
            db,
            cache,
            freshness: Arc::new(FreshnessCache::new(settings.freshness_cache())),
            settings: Arc::new(settings.clone()),
        }
    }
}
