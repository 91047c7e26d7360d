use ledgerboard_core::db::Database;

/// What every handler can reach. Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct AppState {
    pub db: Database,
}
