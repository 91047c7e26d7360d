//! The life of a daemon process once its settings are loaded, shared by the api, the projector
//! and the reconciler so that their mains only say what differs: the runtime and the exit
//! code ([`main`]), the signal handler, PostgreSQL and the Redis client ([`Daemon::open`]), the
//! admin server and the outbox gauges, and the order things stop in ([`Daemon::stop`]).

use std::fmt::Display;
use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::admin::{self, Health};
use super::contact::{self, Contacts};
use super::{StartupError, exit, open_database, outbox_gauges};
use crate::config::{Count, DatabaseSettings, RedisSettings, Settings};
use crate::db::Database;
use crate::projection::Store;
use crate::shutdown;
use crate::telemetry::Telemetry;

/// A binary's whole `main` (the daemons, `lbctl`, `lbchaos`): parses the flags `A`, runs `run`
/// on a multi-threaded Tokio runtime and turns its result into the exit code (see [`exit`]; the
/// error is rendered with its causes, `{:#}`).
pub fn main<A, E, F>(name: &'static str, run: impl FnOnce(A) -> F) -> ExitCode
where
    A: clap::Parser,
    E: Display,
    F: Future<Output = Result<(), E>>,
{
    let args = A::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{name}: cannot start the Tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async { exit(name, run(args).await.map_err(|e| format!("{e:#}"))) })
}

/// Binds a listener for the setting `setting` (named in the error).
pub async fn bind(addr: SocketAddr, setting: &'static str) -> Result<TcpListener, StartupError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| StartupError::Listen {
            addr,
            setting,
            source,
        })
}

/// What a started daemon holds: the stores it works on, the token its shutdown signal
/// cancels, its telemetry, and the background tasks [`Daemon::stop`] ends.
pub struct Daemon {
    name: &'static str,
    pub cancel: CancellationToken,
    pub db: Database,
    pub store: Store,
    /// The readiness heartbeat's own PostgreSQL pool (one connection) and Redis client:
    /// `/readyz` never waits behind, or takes from, the pools the work uses.
    heartbeat_db: Database,
    heartbeat_store: Store,
    telemetry: Telemetry,
    outbox_sample_interval: Duration,
    /// In start order; aborted in reverse.
    tasks: Vec<JoinHandle<()>>,
}

impl Daemon {
    /// Installs the signal handler, opens PostgreSQL (waiting for it and checking the schema,
    /// see [`open_database`]) and builds the Redis client. `Ok(None)` means shutdown was
    /// requested while waiting for PostgreSQL.
    pub async fn open<D: Sync>(
        name: &'static str,
        settings: &Settings<D>,
        telemetry: Telemetry,
    ) -> Result<Option<Self>, StartupError> {
        let cancel = shutdown::on_signal();
        let Some(db) = open_database(settings, name, &cancel).await? else {
            return Ok(None);
        };
        let store = Store::connect(&settings.redis).map_err(StartupError::Redis)?;
        let heartbeat_db = Database::connect(
            &DatabaseSettings {
                pool_max_size: const { Count::of(1) },
                ..settings.database.clone()
            },
            &format!("{name}-heartbeat"),
        )?;
        let heartbeat_store = Store::connect(&RedisSettings {
            pool_max_size: const { Count::of(1) },
            ..settings.redis.clone()
        })
        .map_err(StartupError::Redis)?;
        Ok(Some(Self {
            name,
            cancel,
            db,
            store,
            heartbeat_db,
            heartbeat_store,
            telemetry,
            outbox_sample_interval: settings.telemetry.outbox_sample_interval(),
            tasks: Vec::new(),
        }))
    }

    /// The health routes (liveness, readiness, metrics) over this daemon's registry, with the
    /// readiness heartbeat started (its first calls made before this returns, so the daemon is
    /// ready as soon as it serves): ready while the last success with each store is at most
    /// `stale` old.
    pub async fn health(&mut self, stale: Duration) -> Health {
        let contacts = Contacts::default();
        let tasks = contact::start(
            self.heartbeat_db.clone(),
            self.heartbeat_store.clone(),
            contacts.clone(),
            contact::heartbeat_interval(stale),
            stale,
            self.cancel.clone(),
        )
        .await;
        self.tasks.extend(tasks);
        Health::new(self.telemetry.registry(), contacts, stale)
    }

    /// Serves `health` on its own port (`addr`, from the setting `setting`) until shutdown.
    pub async fn serve_admin(
        &mut self,
        addr: SocketAddr,
        setting: &'static str,
        health: Health,
    ) -> Result<SocketAddr, StartupError> {
        let until = self.cancel.clone();
        self.serve_admin_until(addr, setting, health, until).await
    }

    /// [`Daemon::serve_admin`] until `until` fires rather than at the shutdown signal: the api
    /// keeps answering its probes (not ready, draining) while it drains.
    pub async fn serve_admin_until(
        &mut self,
        addr: SocketAddr,
        setting: &'static str,
        health: Health,
        until: CancellationToken,
    ) -> Result<SocketAddr, StartupError> {
        let (local, task) =
            admin::serve(addr, health, until)
                .await
                .map_err(|source| StartupError::Listen {
                    addr,
                    setting,
                    source,
                })?;
        self.tasks.push(task);
        Ok(local)
    }

    /// Samples the outbox gauges every `telemetry.outbox_sample_interval_ms` until shutdown.
    pub fn spawn_outbox_gauges(&mut self) {
        self.tasks.push(outbox_gauges::spawn(
            self.db.clone(),
            self.outbox_sample_interval,
            self.cancel.clone(),
        ));
    }

    /// Ends the background tasks, closes the pool and flushes the telemetry, silently (a
    /// one-shot run whose output is its report).
    pub async fn close(self) {
        for task in self.tasks.iter().rev() {
            task.abort();
        }
        self.db.close();
        self.heartbeat_db.close();
        self.telemetry.shutdown().await;
    }

    /// [`Daemon::close`], then logs "<name> stopped".
    pub async fn stop(self) {
        let name = self.name;
        self.close().await;
        tracing::info!("{name} stopped");
    }
}
