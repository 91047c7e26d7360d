//! The Redis connections shared by the daemons, with connect and response timeouts on every
//! one, so a stalled Redis turns into an error rather than a hang: a bounded pool for a single
//! server, or one multiplexed connection to a Redis Cluster (`cluster.rs`). Every call is
//! timed into `metrics.rs`.

use std::time::Instant;

use deadpool_redis::{Manager, Pool, Runtime};
use redis::aio::ConnectionLike;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, Value};

use super::cluster::{self, ClusterLink};
use super::keys::KeyLayout;
use super::metrics::{command_label, record};
use crate::config::{RedisSettings, redact_url};
use crate::model::BoardId;

#[derive(Debug, thiserror::Error)]
pub enum ReadModelError {
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    #[error("redis error: {0}")]
    Redis(redis::RedisError),
    /// A reply of a shape the caller does not know (a script of another version).
    #[error("unexpected redis reply: {0}")]
    Reply(String),
    /// The error of a read shared by several requests (the api's coalesced reads).
    #[error(transparent)]
    Shared(std::sync::Arc<ReadModelError>),
    /// A `rediss://` setting that cannot be used (a CA or client certificate file).
    #[error("redis TLS: {0}")]
    Tls(#[from] crate::tls::TlsFileError),
}

impl From<redis::RedisError> for ReadModelError {
    fn from(err: redis::RedisError) -> Self {
        ReadModelError::Redis(err)
    }
}

impl From<deadpool_redis::PoolError> for ReadModelError {
    fn from(err: deadpool_redis::PoolError) -> Self {
        ReadModelError::Unavailable(err.to_string())
    }
}

/// Where one `url` leads, with its TLS when it is `rediss://`: the certificate must chain to
/// `redis.ca_file` (else the system's roots) and name the host, and the client certificate is
/// presented when set. The files are read here, so a bad one stops the daemon at start-up.
fn connection_info(
    settings: &RedisSettings,
    url: &str,
) -> Result<redis::ConnectionInfo, ReadModelError> {
    if !url.trim_start().starts_with("rediss://") {
        return Ok(redis::IntoConnectionInfo::into_connection_info(url)?);
    }
    let client = redis::Client::build_with_tls(url, super::tls::certificates(settings)?)?;
    Ok(client.get_connection_info().clone())
}

/// The read model's Redis connections and the key layout of this deployment's namespace.
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    keys: KeyLayout,
    url_for_logs: String,
    /// One client per URL (each seed in cluster mode) for the live updates' subscriber
    /// (`live.rs`), which needs a connection of its own in subscribed mode.
    subscribers: std::sync::Arc<Subscribers>,
}

/// What [`Store::subscriber`] connects with.
struct Subscribers {
    clients: Vec<redis::Client>,
    /// A connect and the SUBSCRIBE's answer.
    open_timeout: std::time::Duration,
}

#[derive(Clone)]
enum Backend {
    Single {
        pool: Pool,
        /// The api's reads: one multiplexed connection they all share (see
        /// [`Store::read_connection`]).
        reads: std::sync::Arc<SharedReads>,
    },
    Cluster(std::sync::Arc<cluster::ClusterBackend>),
}

/// One multiplexed connection shared by every read: opened on first use, dropped by the first
/// read that finds it broken (an I/O error, a refused or dropped connection, a timeout) and
/// opened again, by that read (which sends its command once more, unless it timed out) or the
/// next. (The redis crate's `ConnectionManager` was tried first: after
/// a reconnect that failed other than by an I/O error it kept answering that error, and the
/// chaos run's reads fell back to PostgreSQL for good.)
struct SharedReads {
    client: redis::Client,
    config: AsyncConnectionConfig,
    /// The open connection and its generation; reads clone it under this lock for a moment.
    link: std::sync::RwLock<Option<(u64, MultiplexedConnection)>>,
    /// Held while a connection opens, so that a burst of reads opens one.
    opening: tokio::sync::Mutex<u64>,
}

impl SharedReads {
    fn current(&self) -> Option<(u64, MultiplexedConnection)> {
        self.link.read().ok().and_then(|l| l.clone())
    }

    async fn get(&self) -> Result<(u64, MultiplexedConnection), ReadModelError> {
        if let Some(open) = self.current() {
            return Ok(open);
        }
        let mut generation = self.opening.lock().await;
        if let Some(open) = self.current() {
            return Ok(open);
        }
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        *generation += 1;
        if let Ok(mut link) = self.link.write() {
            *link = Some((*generation, conn.clone()));
        }
        Ok((*generation, conn))
    }

    /// Forgets connection `generation` after `err` when the error says the connection, not
    /// the command, failed; answers whether the command is worth sending once more on a new
    /// connection: a connection found closed (Redis restarted, a failover) is, a timeout is
    /// not (a Redis that does not answer would only be waited for twice).
    fn after(&self, generation: u64, err: &redis::RedisError) -> bool {
        let closed = err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_unrecoverable_error();
        if !closed && !err.is_timeout() {
            return false;
        }
        if let Ok(mut link) = self.link.write()
            && link.as_ref().is_some_and(|(g, _)| *g == generation)
        {
            *link = None;
        }
        closed && !err.is_timeout()
    }

    /// A new connection after [`Self::after`], as a redis error for the caller's reply.
    async fn reopen(&self) -> redis::RedisResult<(u64, MultiplexedConnection)> {
        self.get().await.map_err(|e| match e {
            ReadModelError::Redis(e) => e,
            other => redis::RedisError::from(std::io::Error::other(other.to_string())),
        })
    }
}

impl Store {
    /// Builds the pool (or the cluster client); connections open on first use.
    pub fn connect(settings: &RedisSettings) -> Result<Self, ReadModelError> {
        let url_for_logs = settings
            .seed_urls()
            .into_iter()
            .map(redact_url)
            .collect::<Vec<_>>()
            .join(",");
        let keys = KeyLayout::new(&settings.namespace);
        let subscribers = std::sync::Arc::new(Subscribers {
            clients: settings
                .seed_urls()
                .into_iter()
                .map(|url| Ok(redis::Client::open(connection_info(settings, url)?)?))
                .collect::<Result<_, ReadModelError>>()?,
            open_timeout: settings.connect_timeout() + settings.response_timeout(),
        });
        if settings.cluster {
            return Ok(Self {
                backend: Backend::Cluster(std::sync::Arc::new(cluster::ClusterBackend::new(
                    settings,
                )?)),
                keys,
                url_for_logs,
                subscribers,
            });
        }
        let connection = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(settings.connect_timeout()))
            .set_response_timeout(Some(settings.response_timeout()));
        let manager = Manager::new_with_config(
            connection_info(settings, &settings.url)?,
            connection.clone(),
        )?;
        let pool = Pool::builder(manager)
            .max_size(settings.pool_max_size.get())
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(settings.connect_timeout()))
            .create_timeout(Some(settings.connect_timeout()))
            .recycle_timeout(Some(settings.response_timeout()))
            .build()
            .map_err(|e| ReadModelError::Unavailable(e.to_string()))?;
        let reads = SharedReads {
            client: redis::Client::open(connection_info(settings, &settings.url)?)?,
            // The pool's bounds: a connect and a response timeout, no retry (a read that fails
            // falls back to PostgreSQL, it does not wait for Redis).
            config: connection.clone(),
            link: std::sync::RwLock::new(None),
            opening: tokio::sync::Mutex::new(0),
        };
        Ok(Self {
            backend: Backend::Single {
                pool,
                reads: std::sync::Arc::new(reads),
            },
            keys,
            url_for_logs,
            subscribers,
        })
    }

    /// A connection in pub/sub mode for the live updates' one subscriber per process
    /// (`live.rs`), to the `attempt`-th URL in turn (in cluster mode the seeds one after the
    /// other, so a node that is down is skipped by the next attempt: a PUBLISH reaches every
    /// node of a cluster, so any node will do). Bounded by the connect and response timeouts.
    pub async fn subscriber(&self, attempt: usize) -> Result<redis::aio::PubSub, ReadModelError> {
        let subs = &self.subscribers;
        let Some(client) = subs.clients.get(attempt % subs.clients.len().max(1)) else {
            return Err(ReadModelError::Unavailable("no redis url".into()));
        };
        match tokio::time::timeout(subs.open_timeout, client.get_async_pubsub()).await {
            Ok(conn) => Ok(conn?),
            Err(_) => Err(ReadModelError::Unavailable(format!(
                "no pub/sub connection within {} ms",
                subs.open_timeout.as_millis()
            ))),
        }
    }

    /// A connection whose every command and pipeline is timed into
    /// `ledgerboard_redis_call_duration_seconds`: a pooled one, or a handle on the shared
    /// cluster connection.
    pub async fn connection(&self) -> Result<TimedConnection, ReadModelError> {
        Ok(TimedConnection(match &self.backend {
            Backend::Single { pool, .. } => Link::Single(pool.get().await?),
            Backend::Cluster(cluster) => Link::Cluster(cluster.link().await?),
        }))
    }

    /// A connection for a read on a request path: the one multiplexed connection every read
    /// shares (a single server), so concurrent reads leave in one write and their replies come
    /// back in one read, on Redis's side too, instead of a socket each taken from the pool; in
    /// cluster mode the shared cluster connection, as [`Self::connection`]. Not for long
    /// pipelines (the projector's batches, the reconciler's scans): they would hold up the
    /// reads queued behind them.
    pub async fn read_connection(&self) -> Result<TimedConnection, ReadModelError> {
        match &self.backend {
            Backend::Single { reads, .. } => {
                let (generation, conn) = reads.get().await?;
                Ok(TimedConnection(Link::Shared {
                    conn,
                    generation,
                    reads: reads.clone(),
                }))
            }
            Backend::Cluster(_) => self.connection().await,
        }
    }

    pub fn is_cluster(&self) -> bool {
        matches!(self.backend, Backend::Cluster(_))
    }

    /// Sends `cmd` to every primary (the one server outside cluster mode) and returns each
    /// one's reply with the node's address: for what is per node, such as configuration,
    /// memory and the key space.
    pub async fn on_each_primary(&self, cmd: Cmd) -> Result<Vec<(String, Value)>, ReadModelError> {
        let mut conn = self.connection().await?;
        match &mut conn.0 {
            Link::Cluster(cluster) => Ok(cluster.on_each_primary(cmd).await?),
            single => {
                let reply = cmd.query_async(single).await?;
                Ok(vec![(self.url_for_logs.clone(), reply)])
            }
        }
    }

    /// Sends `cmd` to one node named by [`Self::on_each_primary`].
    pub async fn on_node(&self, node: &str, cmd: Cmd) -> Result<Value, ReadModelError> {
        let mut conn = self.connection().await?;
        match &mut conn.0 {
            Link::Cluster(cluster) => Ok(cluster.on_node(node, cmd).await?),
            single => Ok(cmd.query_async(single).await?),
        }
    }

    /// Every key matching `pattern` (SCAN on each primary; for operators' tools and tests, never
    /// on a request path).
    pub async fn scan_keys(&self, pattern: &str) -> Result<Vec<String>, ReadModelError> {
        let mut found = Vec::new();
        for (node, _) in self.on_each_primary(redis::cmd("PING")).await? {
            let mut cursor: u64 = 0;
            loop {
                let scan = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .clone();
                let (next, keys): (u64, Vec<String>) =
                    redis::from_redis_value(self.on_node(&node, scan).await?)
                        .map_err(redis::RedisError::from)?;
                found.extend(keys);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(found)
    }

    /// Deletes every key matching `pattern` (found by [`Self::scan_keys`]) with UNLINK, 500 a
    /// call, and answers how many: for operators' tools and tests cleaning up a namespace of
    /// their own, never on a request path.
    pub async fn unlink_matching(&self, pattern: &str) -> Result<usize, ReadModelError> {
        let keys = self.scan_keys(pattern).await?;
        let mut conn = self.connection().await?;
        for chunk in keys.chunks(500) {
            let _: i64 = redis::cmd("UNLINK")
                .arg(chunk)
                .query_async(&mut conn)
                .await?;
        }
        Ok(keys.len())
    }

    /// Unlinks every key of one board ([`KeyLayout::board_keys`]) in one call; how many
    /// existed. For an archived period (the reconciler), never on a request path.
    pub async fn drop_board(&self, board: &BoardId) -> Result<i64, ReadModelError> {
        let mut conn = self.connection().await?;
        Ok(redis::cmd("UNLINK")
            .arg(self.keys.board_keys(board))
            .query_async(&mut conn)
            .await?)
    }

    pub fn keys(&self) -> &KeyLayout {
        &self.keys
    }

    pub fn url_for_logs(&self) -> &str {
        &self.url_for_logs
    }

    /// One PING through the pool, within the configured bounds.
    pub async fn ping(&self) -> Result<(), ReadModelError> {
        let mut conn = self.connection().await?;
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }
}

/// A connection that records the latency of each call it carries.
pub struct TimedConnection(Link);

enum Link {
    Single(deadpool_redis::Connection),
    Shared {
        conn: MultiplexedConnection,
        generation: u64,
        reads: std::sync::Arc<SharedReads>,
    },
    Cluster(ClusterLink),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Single(c) => c.req_packed_command(cmd),
            Link::Shared {
                conn,
                generation,
                reads,
            } => Box::pin(async move {
                match conn.req_packed_command(cmd).await {
                    // Reads are idempotent: once more on a new connection.
                    Err(e) if reads.after(*generation, &e) => {
                        (*generation, *conn) = reads.reopen().await?;
                        let reply = conn.req_packed_command(cmd).await;
                        if let Err(e) = &reply {
                            reads.after(*generation, e);
                        }
                        reply
                    }
                    reply => reply,
                }
            }),
            Link::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Link::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Shared {
                conn,
                generation,
                reads,
            } => Box::pin(async move {
                match conn.req_packed_commands(pipeline, offset, count).await {
                    Err(e) if reads.after(*generation, &e) => {
                        (*generation, *conn) = reads.reopen().await?;
                        let reply = conn.req_packed_commands(pipeline, offset, count).await;
                        if let Err(e) = &reply {
                            reads.after(*generation, e);
                        }
                        reply
                    }
                    reply => reply,
                }
            }),
            Link::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Single(c) => c.get_db(),
            Link::Shared { conn, .. } => conn.get_db(),
            Link::Cluster(c) => c.get_db(),
        }
    }
}

impl ConnectionLike for TimedConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let started = Instant::now();
            let reply = self.0.req_packed_command(cmd).await;
            record(command_label(cmd), started);
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let started = Instant::now();
            let reply = self.0.req_packed_commands(pipeline, offset, count).await;
            record("pipeline", started);
            reply
        })
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}
