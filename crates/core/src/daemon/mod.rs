//! Start-up steps every daemon shares: settings, logs, then a database that answers and holds
//! exactly the schema this binary was built for; the admin server ([`admin`]) and the outbox
//! gauges ([`outbox_gauges`]).
//!
//! The top layer of core: it may import every other module, and none imports it.

pub mod admin;
pub mod outbox_gauges;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::db::{Database, StoreError, check_schema, wait_until_reachable};
use crate::telemetry::Telemetry;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Telemetry(#[from] crate::telemetry::TelemetryError),
}

/// Flags every daemon takes.
#[derive(Debug, Clone, clap::Args)]
pub struct DaemonArgs {
    /// A TOML settings file. Environment variables LEDGERBOARD__<SECTION>__<NAME> override it
    /// (see docs/configuration.md).
    #[arg(long, env = "LEDGERBOARD_CONFIG")]
    pub config: Option<PathBuf>,
}

/// The process exit for a binary's result (the error already rendered with its causes): the
/// message on stderr and in the log, and a non-zero code.
pub fn exit(name: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "{name} stopped");
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A daemon's first step: loads the settings (file, then environment) and installs logs,
/// traces and metrics. Call it inside the Tokio runtime.
pub fn start(
    service: &'static str,
    config_file: Option<&Path>,
) -> Result<(Settings, Telemetry), StartupError> {
    let settings = Settings::load(config_file)?;
    let telemetry = crate::telemetry::init(service, &settings.log, &settings.telemetry)?;
    Ok((settings, telemetry))
}

/// Loads the settings (file, then environment) and installs logging only (`lbctl`).
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
