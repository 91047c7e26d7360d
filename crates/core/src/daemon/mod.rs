//! Start-up steps every daemon shares: settings, logs, then a database that answers and holds
//! the schema this binary was built for or the next release's; the admin server ([`admin`])
//! and the outbox gauges ([`outbox_gauges`]); the process around them ([`process`]: runtime,
//! signal, stores, background tasks, stop).
//!
//! The top layer of core: it may import every other module, and none imports it.

pub mod admin;
pub mod contact;
pub mod outbox_gauges;
pub mod process;

pub use process::{Daemon, bind, main};

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use crate::config::{DaemonSection, Loaded, NotRead, Settings};
use crate::db::{Compatibility, Database, StoreError, check_schema, wait_until_reachable};
use crate::telemetry::Telemetry;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Telemetry(#[from] crate::telemetry::TelemetryError),
    #[error("redis.url")]
    Redis(#[source] crate::projection::ReadModelError),
    #[error("cannot listen on {addr} ({setting})")]
    Listen {
        addr: std::net::SocketAddr,
        setting: &'static str,
        #[source]
        source: std::io::Error,
    },
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

/// A daemon's first step: loads the shared settings and the daemon's own `D` (file, then
/// environment) and installs logs, traces and metrics. Call it inside the Tokio runtime.
pub fn start<D: DaemonSection>(
    service: &'static str,
    config_file: Option<&Path>,
) -> Result<(Settings<D>, Telemetry), StartupError> {
    let Loaded {
        settings, not_read, ..
    } = crate::config::load::<D>(config_file)?;
    let telemetry = crate::telemetry::init(service, &settings.log, &settings.telemetry)?;
    report_not_read(service, &not_read);
    Ok((settings, telemetry))
}

/// Loads the settings (file, then environment) and installs logging only (`lbctl`).
pub fn load_settings<D: DaemonSection>(
    config_file: Option<&Path>,
) -> Result<Settings<D>, StartupError> {
    let Loaded {
        settings, not_read, ..
    } = crate::config::load::<D>(config_file)?;
    crate::telemetry::init_logging(&settings.log);
    report_not_read(&binary_name(), &not_read);
    Ok(settings)
}

/// Loads the settings again with a daemon's sections `D`, for a tool that loaded the shared
/// ones with [`load_settings`] and needs one daemon's for one command (`lbctl rebuild` reads
/// the reconciler's), so no other command depends on them.
pub fn load_daemon_settings<D: DaemonSection>(
    config_file: Option<&Path>,
) -> Result<Settings<D>, StartupError> {
    let loaded = crate::config::load::<D>(config_file)?;
    let not_read: Vec<NotRead> = loaded.ignored_in_daemon_sections().cloned().collect();
    report_not_read(&binary_name(), &not_read);
    Ok(loaded.settings)
}

/// Says what the settings file or the environment holds that `binary` does not read, never
/// fatal: an unknown name (a typo, with the closest known name, or a setting of a newer version
/// after a rollback) and a section no daemon has as warnings; another daemon's section, which
/// a file or ConfigMap shared by the daemons always holds, as information.
fn report_not_read(binary: &str, not_read: &[NotRead]) {
    for item in not_read {
        let message = item.message(binary);
        if item.is_warning() {
            tracing::warn!(setting = item.name(), "{message}");
        } else {
            tracing::info!(section = item.name(), "{message}");
        }
    }
}

/// This process's binary, as its messages name it (`lbctl`), from its first argument.
fn binary_name() -> String {
    std::env::args_os()
        .next()
        .as_deref()
        .and_then(|arg| Path::new(arg).file_name())
        .map_or_else(
            || "this binary".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        )
}

/// Opens the pool, waits for PostgreSQL (bounded by `database.startup_timeout_ms`) and checks
/// the schema version. `Ok(None)` means shutdown was requested while waiting.
pub async fn open_database<D: Sync>(
    settings: &Settings<D>,
    application_name: &str,
    cancel: &CancellationToken,
) -> Result<Option<Database>, StartupError> {
    let db = Database::connect(&settings.database, application_name)?;
    tracing::info!(url = db.url_for_logs(), "connecting to PostgreSQL");
    if !wait_until_reachable(&db, settings.database.startup_timeout(), cancel).await? {
        return Ok(None);
    }
    let schema = check_schema(&db).await?;
    let compatibility = schema.ensure_compatible()?;
    // Said at every start, so that a pod of the previous release running against the next
    // schema (a rolling upgrade, a rollback) is visible as such in its log.
    let message = schema.describe();
    match compatibility {
        Compatibility::Current => tracing::info!(
            schema_version = schema.applied,
            binary_schema_version = schema.known,
            "PostgreSQL ready: {message}"
        ),
        Compatibility::OneAhead => tracing::warn!(
            schema_version = schema.applied,
            binary_schema_version = schema.known,
            "PostgreSQL ready: {message}"
        ),
    }
    Ok(Some(db))
}
