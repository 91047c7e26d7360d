//! Start-up steps every daemon shares: settings, logs, then a database that answers and holds
//! exactly the schema this binary was built for.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::db::{Database, StoreError, check_schema, wait_until_reachable};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Loads the settings (file, then environment) and installs logging.
pub fn load_settings(config_file: Option<&Path>) -> Result<Settings, StartupError> {
    let settings = Settings::load(config_file)?;
    crate::telemetry::init_logging(&settings.log);
    Ok(settings)
}

/// Opens the pool, waits for PostgreSQL (bounded by `database.startup_timeout_ms`) and checks
/// the schema version. `Ok(None)` means shutdown was requested while waiting.
pub async fn open_database(
    settings: &Settings,
    application_name: &str,
    cancel: &CancellationToken,
) -> Result<Option<Database>, StartupError> {
    let db = Database::connect(&settings.database, application_name)?;
    tracing::info!(url = db.url_for_logs(), "connecting to PostgreSQL");
    if !wait_until_reachable(&db, settings.database.startup_timeout(), cancel).await? {
        return Ok(None);
    }
    let schema = check_schema(&db).await?;
    schema.ensure_compatible()?;
    tracing::info!(schema_version = schema.known, "PostgreSQL ready");
    Ok(Some(db))
}
