//! Settings: built-in defaults, then an optional TOML file, then environment variables
//! `LEDGERBOARD__<SECTION>__<NAME>` (for example `LEDGERBOARD__DATABASE__URL`). Every field has
//! a bound; a value outside it, a value of the wrong type or an unknown name stops the daemon
//! with a message that names the setting.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub const ENV_PREFIX: &str = "LEDGERBOARD";
const ENV_SEPARATOR: &str = "__";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // Not a `#[source]`: its text is already in this message, and error chains would repeat it.
    #[error("configuration: {0}")]
    Load(config::ConfigError),
    #[error("configuration: {setting} ({env}): {reason}")]
    Invalid {
        setting: &'static str,
        env: String,
        reason: String,
    },
}

impl From<config::ConfigError> for ConfigError {
    fn from(err: config::ConfigError) -> Self {
        Self::Load(err)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    pub api: ApiSettings,
    pub projector: ProjectorSettings,
    pub reconciler: ReconcilerSettings,
    pub shutdown: ShutdownSettings,
    pub log: LogSettings,
    pub telemetry: TelemetrySettings,
    pub auth: AuthSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `postgres://user:password@host:port/dbname`. Never logged with its password.
    pub url: String,
    /// Upper bound on connections this process opens.
    pub pool_max_size: usize,
    /// Bound on establishing one connection (TCP + start-up).
    pub connect_timeout_ms: u64,
    /// Bound on waiting for a free pooled connection; past it a request gets 503.
    pub pool_wait_timeout_ms: u64,
    /// `statement_timeout` of every session, and (with a margin) the client-side bound on one
    /// round trip.
    pub statement_timeout_ms: u64,
    /// How long a daemon waits for PostgreSQL to answer at start-up before giving up.
    pub startup_timeout_ms: u64,
    /// `url` leads to a transaction pooler (PgBouncer `pool_mode = transaction`): statements
    /// are sent unnamed (no prepared statement outlives its round trip) and no start-up
    /// `options` are sent, so `statement_timeout` must be set on the role (see
    /// docs/operations.md).
    pub transaction_pooler: bool,
    /// A direct connection to PostgreSQL for what needs a session of its own: the projectors'
    /// LISTEN and the migration lock. Empty: `url`.
    pub direct_url: String,
}

impl DatabaseSettings {
    /// Where LISTEN and migrations connect: `direct_url`, or `url` when it is empty.
    pub fn session_url(&self) -> &str {
        if self.direct_url.is_empty() {
            &self.url
        } else {
            &self.direct_url
        }
    }
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: "postgres://postgres@127.0.0.1:5432/ledgerboard".into(),
            pool_max_size: 16,
            connect_timeout_ms: 2_000,
            pool_wait_timeout_ms: 2_000,
            statement_timeout_ms: 5_000,
            startup_timeout_ms: 120_000,
            transaction_pooler: false,
            direct_url: String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisSettings {
    /// The server's URL; in cluster mode, one or more nodes' URLs separated by commas (the
    /// seeds from which the client learns the cluster).
    pub url: String,
    /// `url` names Redis Cluster nodes: keys are placed by slot and pipelines split per slot.
    pub cluster: bool,
    /// Prefix of every key (see `keys`), so deployments and tests can share one Redis.
    pub namespace: String,
    pub pool_max_size: usize,
    pub connect_timeout_ms: u64,
    pub response_timeout_ms: u64,
}

impl Default for RedisSettings {
    fn default() -> Self {
        Self {
            url: "redis://127.0.0.1:6379".into(),
            cluster: false,
            namespace: "ledgerboard".into(),
            pool_max_size: 16,
            connect_timeout_ms: 1_000,
            response_timeout_ms: 1_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiSettings {
    /// Address the HTTP server binds, e.g. `127.0.0.1:8080` (`0.0.0.0:8080` in a container).
    pub listen: String,
    /// Largest accepted request body; a larger one is answered 413.
    pub body_limit_bytes: usize,
    /// Bound on handling one request, end to end.
    pub request_timeout_ms: u64,
    /// `consistency=bounded` reads (the default) come from the projection while its oldest
    /// pending row is at most this old, else from PostgreSQL.
    pub max_lag_ms: u64,
    /// How long one measurement of the projection's lag serves all reads.
    pub freshness_cache_ms: u64,
    /// Requests per second allowed per token (or, without one, per client address); 0 turns
    /// the limit off.
    pub rate_limit_per_s: u32,
    /// Requests a token or address may send at once above the rate before 429.
    pub rate_limit_burst: u32,
    /// Most connections open at once; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// Bound on receiving a request's headers; a slower client is disconnected.
    pub header_timeout_ms: u64,
    /// Connections of the api's second PostgreSQL pool, for reads (strong reads, fallbacks,
    /// the lag measurement); commands use `database.pool_max_size` of their own, so slow or
    /// many reads cannot starve commands. It also bounds how many database reads run at once.
    pub read_pool_max_size: usize,
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            body_limit_bytes: 16 * 1024,
            request_timeout_ms: 10_000,
            max_lag_ms: 2_000,
            freshness_cache_ms: 100,
            rate_limit_per_s: 1_000,
            rate_limit_burst: 2_000,
            max_connections: 10_000,
            header_timeout_ms: 5_000,
            read_pool_max_size: 8,
        }
    }
}

/// How the projector holds the rows it is applying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimMode {
    /// Row locks held in one transaction around the Redis call (one commit per batch).
    Transactional,
    /// A lease written in a short transaction; Redis is called with no transaction open.
    Leased,
}

/// What the projector does when Redis is configured so that it can lose projected keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnsafeRedisAction {
    Warn,
    Refuse,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectorSettings {
    pub mode: ClaimMode,
    /// Claim loops per process; replicas are the main way to scale.
    pub workers: usize,
    /// Most rows claimed and applied in one round trip.
    pub batch_size: usize,
    /// Longest wait between claims when no notification arrives (the fallback to LISTEN).
    pub poll_interval_ms: u64,
    /// Leased mode: how long a claimed row stays reserved for its projector (database clock).
    pub lease_ms: u64,
    /// Failed attempts after which a row is parked (kept out of the claim until requeued).
    pub max_attempts: u32,
    /// Retry delay after the first failure; doubles per attempt up to `retry_max_ms`.
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
    /// Longest back-off while Redis is unreachable or out of memory.
    pub outage_backoff_max_ms: u64,
    /// How long Redis remembers that an event was applied (its marker's TTL).
    pub event_marker_ttl_ms: u64,
    /// Published outbox rows older than this are deleted; 0 keeps them.
    pub published_retention_ms: u64,
    /// `score_events` rows older than this are deleted; 0 (the default) keeps them. An event id
    /// older than the window could then apply twice.
    pub event_retention_ms: u64,
    pub retention_interval_ms: u64,
    /// Rows deleted per retention transaction.
    pub retention_batch: usize,
    /// How often Redis's eviction policy and memory use are checked.
    pub redis_check_interval_ms: u64,
    pub unsafe_redis: UnsafeRedisAction,
    /// Fraction of `maxmemory` above which Redis counts as close to its limit.
    pub redis_memory_warn_ratio: f64,
    /// Address of the admin server (`/healthz`, `/readyz`, `/metrics`); port 0 picks a free one.
    pub admin_listen: String,
}

impl Default for ProjectorSettings {
    fn default() -> Self {
        Self {
            mode: ClaimMode::Transactional,
            workers: 1,
            batch_size: 500,
            poll_interval_ms: 1_000,
            lease_ms: 60_000,
            max_attempts: 10,
            retry_base_ms: 500,
            retry_max_ms: 300_000,
            outage_backoff_max_ms: 5_000,
            event_marker_ttl_ms: 86_400_000,
            published_retention_ms: 3_600_000,
            event_retention_ms: 0,
            retention_interval_ms: 60_000,
            retention_batch: 1_000,
            redis_check_interval_ms: 60_000,
            unsafe_redis: UnsafeRedisAction::Warn,
            redis_memory_warn_ratio: 0.9,
            admin_listen: "127.0.0.1:9101".into(),
        }
    }
}

impl ProjectorSettings {
    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_interval_ms)
    }
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }
    pub fn outage_backoff_max(&self) -> Duration {
        Duration::from_millis(self.outage_backoff_max_ms)
    }
    pub fn event_marker_ttl(&self) -> Duration {
        Duration::from_millis(self.event_marker_ttl_ms)
    }
    pub fn retention_interval(&self) -> Duration {
        Duration::from_millis(self.retention_interval_ms)
    }
    pub fn redis_check_interval(&self) -> Duration {
        Duration::from_millis(self.redis_check_interval_ms)
    }
    pub fn admin_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.admin_listen
            .parse()
            .map_err(|e| invalid("projector.admin_listen", e))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReconcilerSettings {
    /// Pause between the end of one pass (or standby attempt) and the next attempt.
    pub interval_ms: u64,
    /// Source rows read (and Redis members checked in one pipeline) per chunk.
    pub chunk_size: usize,
    /// Lifetime of the single-reconciler lock in Redis; renewed while a pass runs.
    pub lock_ttl_ms: u64,
    /// How often the lock is renewed; at most half the TTL, so one missed renewal is survived.
    pub lock_renew_ms: u64,
    /// Repair rows whose projection is ahead of the source (a newer version in Redis). Off by
    /// default: it may mean a wrong database or a restored backup, which a person should see.
    pub repair_ahead: bool,
    /// Remove members that have no source row.
    pub remove_orphans: bool,
    /// Run a pass at once when Redis comes back as a new server (its run id changed: a restart
    /// or a failover), since a replica that was behind keeps its seals. `lbctl chaos` turns it
    /// off to prove the projection without any pass.
    pub pass_on_new_redis: bool,
    /// Address of the admin server (`/healthz`, `/readyz`, `/metrics`); port 0 picks a free one.
    pub admin_listen: String,
    /// Boards one pass checks at most (0: every board once). The walk continues in the next
    /// pass from the board after the last one finished.
    pub max_boards_per_pass: usize,
}

impl Default for ReconcilerSettings {
    fn default() -> Self {
        Self {
            interval_ms: 300_000,
            chunk_size: 1_000,
            lock_ttl_ms: 30_000,
            lock_renew_ms: 10_000,
            repair_ahead: false,
            remove_orphans: true,
            pass_on_new_redis: true,
            admin_listen: "127.0.0.1:9102".into(),
            max_boards_per_pass: 0,
        }
    }
}

impl ReconcilerSettings {
    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms)
    }
    pub fn lock_ttl(&self) -> Duration {
        Duration::from_millis(self.lock_ttl_ms)
    }
    pub fn lock_renew(&self) -> Duration {
        Duration::from_millis(self.lock_renew_ms)
    }
    pub fn admin_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.admin_listen
            .parse()
            .map_err(|e| invalid("reconciler.admin_listen", e))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShutdownSettings {
    /// After SIGTERM, how long in-flight work may take before the process exits anyway. Keep it
    /// below Kubernetes' `terminationGracePeriodSeconds`.
    pub grace_ms: u64,
}

impl Default for ShutdownSettings {
    fn default() -> Self {
        Self { grace_ms: 25_000 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `info,ledgerboard_core=debug`.
    pub filter: String,
}

/// Who may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAccess {
    /// Reads need no token.
    Public,
    /// Reads need a token with any scope.
    Token,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// Bearer tokens as `name=<sha256 hex>@scope[,scope]` entries separated by `;` (see
    /// `auth.rs`). Empty: no token exists, and every score command is refused.
    pub tokens: String,
    pub reads: ReadAccess,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            tokens: String::new(),
            reads: ReadAccess::Public,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// OTLP/gRPC collector, e.g. `http://otel-collector:4317` (no TLS). Empty: traces and
    /// metrics are not exported (metrics stay scrapeable at `/metrics`).
    pub otlp_endpoint: String,
    /// Bound on one export call to the collector.
    pub otlp_timeout_ms: u64,
    /// How often metrics are pushed to the collector.
    pub metrics_export_interval_ms: u64,
    /// Fraction of new traces kept (a request that arrives with a sampled `traceparent` is
    /// always kept).
    pub trace_sample_ratio: f64,
    /// How often each daemon reads the outbox's pending count, oldest pending age and parked
    /// count for its gauges.
    pub outbox_sample_interval_ms: u64,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_endpoint: String::new(),
            otlp_timeout_ms: 5_000,
            metrics_export_interval_ms: 15_000,
            trace_sample_ratio: 1.0,
            outbox_sample_interval_ms: 5_000,
        }
    }
}

impl TelemetrySettings {
    pub fn otlp_timeout(&self) -> Duration {
        Duration::from_millis(self.otlp_timeout_ms)
    }
    pub fn metrics_export_interval(&self) -> Duration {
        Duration::from_millis(self.metrics_export_interval_ms)
    }
    pub fn outbox_sample_interval(&self) -> Duration {
        Duration::from_millis(self.outbox_sample_interval_ms)
    }
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Human,
            filter: "info".into(),
        }
    }
}

impl DatabaseSettings {
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }
    pub fn pool_wait_timeout(&self) -> Duration {
        Duration::from_millis(self.pool_wait_timeout_ms)
    }
    pub fn statement_timeout(&self) -> Duration {
        Duration::from_millis(self.statement_timeout_ms)
    }
    /// Client-side bound on one round trip: the server's statement timeout plus a margin for
    /// the network, so the server normally cancels first and says why.
    pub fn round_trip_timeout(&self) -> Duration {
        self.statement_timeout() + Duration::from_millis(1_000)
    }
    pub fn startup_timeout(&self) -> Duration {
        Duration::from_millis(self.startup_timeout_ms)
    }
}

impl RedisSettings {
    /// The URLs in `url`: one, or in cluster mode each seed.
    pub fn seed_urls(&self) -> Vec<&str> {
        if self.cluster {
            self.url.split(',').map(str::trim).collect()
        } else {
            vec![self.url.as_str()]
        }
    }
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }
    pub fn response_timeout(&self) -> Duration {
        Duration::from_millis(self.response_timeout_ms)
    }
}

impl ApiSettings {
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.listen.parse().map_err(|e| invalid("api.listen", e))
    }
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
    pub fn freshness_cache(&self) -> Duration {
        Duration::from_millis(self.freshness_cache_ms)
    }
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }
}

impl ShutdownSettings {
    pub fn grace(&self) -> Duration {
        Duration::from_millis(self.grace_ms)
    }
}

impl Settings {
    /// Loads from the defaults, the optional file, and the process environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(file, None)
    }

    /// As [`Settings::load`], with the environment given as a map instead of read from the
    /// process (tests use this: the process environment is shared between threads).
    pub fn load_from(
        file: Option<&Path>,
        env: Option<HashMap<String, String>>,
    ) -> Result<Self, ConfigError> {
        let defaults = config::Config::try_from(&Settings::default())?;
        let mut builder = config::Config::builder().add_source(defaults);
        if let Some(path) = file {
            builder = builder.add_source(
                config::File::from(path)
                    .format(config::FileFormat::Toml)
                    .required(true),
            );
        }
        builder = builder.add_source(
            config::Environment::with_prefix(ENV_PREFIX)
                .prefix_separator(ENV_SEPARATOR)
                .separator(ENV_SEPARATOR)
                .try_parsing(true)
                .source(env),
        );
        let settings: Settings = builder.build()?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let db = &self.database;
        parse_postgres_url(&db.url)?;
        if !db.direct_url.is_empty() {
            parse_postgres_url(&db.direct_url)
                .map_err(|_| invalid("database.direct_url", "not a PostgreSQL URL".to_owned()))?;
        } else if db.transaction_pooler {
            return Err(invalid(
                "database.direct_url",
                "required with database.transaction_pooler: LISTEN and the migration lock need a session of their own".to_owned(),
            ));
        }
        in_range("database.pool_max_size", db.pool_max_size as u64, 1, 1_000)?;
        in_range(
            "database.connect_timeout_ms",
            db.connect_timeout_ms,
            10,
            600_000,
        )?;
        in_range(
            "database.pool_wait_timeout_ms",
            db.pool_wait_timeout_ms,
            1,
            600_000,
        )?;
        in_range(
            "database.statement_timeout_ms",
            db.statement_timeout_ms,
            10,
            3_600_000,
        )?;
        in_range(
            "database.startup_timeout_ms",
            db.startup_timeout_ms,
            0,
            86_400_000,
        )?;

        let redis = &self.redis;
        // TLS (rediss://) is not built in: refuse it here rather than at the first connect.
        for url in redis.seed_urls() {
            let scheme_ok = redis::parse_redis_url(url)
                .is_some_and(|u| matches!(u.scheme(), "redis" | "redis+unix" | "unix"));
            if !scheme_ok {
                return Err(invalid(
                    "redis.url",
                    if redis.cluster {
                        "not a comma-separated list of redis:// URLs"
                    } else {
                        "not a redis:// or unix:// URL (a list of seeds needs redis.cluster = true)"
                    },
                ));
            }
        }
        validate_namespace(&redis.namespace)?;
        in_range("redis.pool_max_size", redis.pool_max_size as u64, 1, 1_000)?;
        in_range(
            "redis.connect_timeout_ms",
            redis.connect_timeout_ms,
            10,
            600_000,
        )?;
        in_range(
            "redis.response_timeout_ms",
            redis.response_timeout_ms,
            10,
            600_000,
        )?;

        self.api.listen_addr()?;
        in_range(
            "api.body_limit_bytes",
            self.api.body_limit_bytes as u64,
            256,
            16 << 20,
        )?;
        in_range(
            "api.request_timeout_ms",
            self.api.request_timeout_ms,
            100,
            600_000,
        )?;
        in_range("api.max_lag_ms", self.api.max_lag_ms, 0, 86_400_000)?;
        in_range(
            "api.freshness_cache_ms",
            self.api.freshness_cache_ms,
            0,
            60_000,
        )?;
        in_range("shutdown.grace_ms", self.shutdown.grace_ms, 0, 3_600_000)?;
        self.validate_projector()?;
        let r = &self.reconciler;
        in_range("reconciler.interval_ms", r.interval_ms, 100, 7 * 86_400_000)?;
        in_range("reconciler.chunk_size", r.chunk_size as u64, 1, 100_000)?;
        in_range("reconciler.lock_ttl_ms", r.lock_ttl_ms, 100, 3_600_000)?;
        // The renewal margin: a renewal may fail once (a slow Redis) and the lock still holds.
        in_range(
            "reconciler.lock_renew_ms",
            r.lock_renew_ms,
            10,
            r.lock_ttl_ms / 2,
        )?;
        in_range(
            "api.max_connections",
            self.api.max_connections as u64,
            1,
            1_000_000,
        )?;
        in_range(
            "api.read_pool_max_size",
            self.api.read_pool_max_size as u64,
            1,
            1_000,
        )?;
        in_range(
            "api.header_timeout_ms",
            self.api.header_timeout_ms,
            100,
            600_000,
        )?;
        in_range(
            "api.rate_limit_per_s",
            u64::from(self.api.rate_limit_per_s),
            0,
            10_000_000,
        )?;
        in_range(
            "api.rate_limit_burst",
            u64::from(self.api.rate_limit_burst),
            1,
            10_000_000,
        )?;
        crate::auth::TokenTable::parse(&self.auth.tokens).map_err(|e| invalid("auth.tokens", e))?;
        self.projector.admin_addr()?;
        self.reconciler.admin_addr()?;
        tracing_subscriber::EnvFilter::try_new(&self.log.filter)
            .map_err(|e| invalid("log.filter", e))?;
        self.validate_telemetry()
    }

    fn validate_telemetry(&self) -> Result<(), ConfigError> {
        let t = &self.telemetry;
        if !t.otlp_endpoint.is_empty() {
            // This build has no TLS (as for PostgreSQL and Redis): https:// would only fail
            // when the exporter is built, so it is refused here with the setting's name.
            let ok = url::Url::parse(&t.otlp_endpoint)
                .is_ok_and(|u| u.scheme() == "http" && u.host().is_some());
            if !ok {
                return Err(invalid(
                    "telemetry.otlp_endpoint",
                    "not an http:// URL (https:// is not supported by this build; empty exports nothing)",
                ));
            }
        }
        in_range("telemetry.otlp_timeout_ms", t.otlp_timeout_ms, 100, 60_000)?;
        in_range(
            "telemetry.metrics_export_interval_ms",
            t.metrics_export_interval_ms,
            100,
            3_600_000,
        )?;
        if !(0.0..=1.0).contains(&t.trace_sample_ratio) {
            return Err(invalid(
                "telemetry.trace_sample_ratio",
                format!("{} is outside 0.0..=1.0", t.trace_sample_ratio),
            ));
        }
        in_range(
            "telemetry.outbox_sample_interval_ms",
            t.outbox_sample_interval_ms,
            100,
            3_600_000,
        )?;
        Ok(())
    }
}

impl Settings {
    /// The longest a projection batch may wait on Redis: a connection, then up to three
    /// round trips (apply, reload the script after NOSCRIPT, apply again).
    pub fn redis_time_per_batch(&self) -> Duration {
        self.redis.connect_timeout() + 3 * self.redis.response_timeout()
    }

    /// The bound on one projection batch: up to five database round trips (BEGIN, claim,
    /// publish, fail, COMMIT) and its time on Redis. Past it the batch is abandoned and its
    /// connection dropped.
    pub fn projector_batch_deadline(&self) -> Duration {
        5 * self.database.round_trip_timeout() + self.redis_time_per_batch()
    }

    fn validate_projector(&self) -> Result<(), ConfigError> {
        let p = &self.projector;
        in_range("projector.workers", p.workers as u64, 1, 64)?;
        in_range("projector.batch_size", p.batch_size as u64, 1, 10_000)?;
        in_range(
            "projector.poll_interval_ms",
            p.poll_interval_ms,
            10,
            600_000,
        )?;
        in_range(
            "projector.max_attempts",
            u64::from(p.max_attempts),
            1,
            1_000,
        )?;
        in_range("projector.retry_base_ms", p.retry_base_ms, 1, 3_600_000)?;
        in_range(
            "projector.retry_max_ms",
            p.retry_max_ms,
            p.retry_base_ms,
            86_400_000,
        )?;
        in_range(
            "projector.outage_backoff_max_ms",
            p.outage_backoff_max_ms,
            10,
            600_000,
        )?;
        in_range(
            "projector.event_marker_ttl_ms",
            p.event_marker_ttl_ms,
            1_000,
            30 * 86_400_000,
        )?;
        in_range(
            "projector.published_retention_ms",
            p.published_retention_ms,
            0,
            365 * 86_400_000,
        )?;
        in_range(
            "projector.event_retention_ms",
            p.event_retention_ms,
            0,
            3_650 * 86_400_000,
        )?;
        in_range(
            "projector.retention_interval_ms",
            p.retention_interval_ms,
            100,
            86_400_000,
        )?;
        in_range(
            "projector.retention_batch",
            p.retention_batch as u64,
            1,
            100_000,
        )?;
        in_range(
            "projector.redis_check_interval_ms",
            p.redis_check_interval_ms,
            100,
            86_400_000,
        )?;
        if !(0.0..=1.0).contains(&p.redis_memory_warn_ratio) {
            return Err(invalid(
                "projector.redis_memory_warn_ratio",
                "must be between 0 and 1",
            ));
        }
        // While a batch waits on Redis, its transaction (transactional mode) sits idle and its
        // lease (leased mode) runs: neither may run out before the batch's own deadline does.
        let redis_ms = self.redis_time_per_batch().as_millis() as u64;
        let idle_in_tx = 2 * self.database.statement_timeout_ms;
        if p.mode == ClaimMode::Transactional && idle_in_tx <= redis_ms {
            return Err(invalid(
                "redis.response_timeout_ms",
                format!(
                    "a batch may wait {redis_ms} ms on Redis (redis.connect_timeout_ms + 3 x redis.response_timeout_ms), \
                     which must stay below idle_in_transaction_session_timeout (2 x database.statement_timeout_ms = {idle_in_tx} ms)"
                ),
            ));
        }
        let deadline_ms = self.projector_batch_deadline().as_millis() as u64;
        if p.mode == ClaimMode::Leased && p.lease_ms <= deadline_ms {
            return Err(invalid(
                "projector.lease_ms",
                format!(
                    "{} ms must exceed a batch's deadline of {deadline_ms} ms \
                     (5 database round trips of statement_timeout + 1 s, plus redis.connect_timeout_ms + 3 x redis.response_timeout_ms)",
                    p.lease_ms
                ),
            ));
        }
        // One connection per worker, one for retention, one for the outbox gauges and the
        // readiness probe: a worker never waits for a connection behind them.
        in_range(
            "projector.workers",
            p.workers as u64 + 2,
            1,
            self.database.pool_max_size as u64,
        )
        .map_err(|_| {
            invalid(
                "projector.workers",
                format!(
                    "{} workers (+1 for retention, +1 for telemetry and probes) need database.pool_max_size >= {}",
                    p.workers,
                    p.workers + 2
                ),
            )
        })?;
        in_range(
            "projector.workers",
            p.workers as u64,
            1,
            self.redis.pool_max_size as u64,
        )
        .map_err(|_| {
            invalid(
                "projector.workers",
                format!(
                    "{} workers need redis.pool_max_size >= {}",
                    p.workers, p.workers
                ),
            )
        })?;
        in_range("projector.lease_ms", p.lease_ms, 100, 3_600_000)?;
        Ok(())
    }
}

/// Parses a PostgreSQL URL; the error never repeats the URL (it may hold a password).
pub fn parse_postgres_url(url: &str) -> Result<tokio_postgres::Config, ConfigError> {
    url.parse::<tokio_postgres::Config>()
        .map_err(|e| invalid("database.url", format!("not a PostgreSQL URL: {e}")))
}

fn validate_namespace(ns: &str) -> Result<(), ConfigError> {
    if crate::ids::is_identifier(ns) {
        Ok(())
    } else {
        Err(invalid(
            "redis.namespace",
            "must be 1 to 64 characters of A-Z, a-z, 0-9, '_', '.' or '-'",
        ))
    }
}

fn in_range(setting: &'static str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            setting,
            format!("{value} is outside {min}..={max}"),
        ))
    }
}

fn invalid(setting: &'static str, reason: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid {
        setting,
        env: env_name(setting),
        reason: reason.to_string(),
    }
}

/// The environment variable that sets a dotted setting name.
pub fn env_name(setting: &str) -> String {
    format!(
        "{ENV_PREFIX}{ENV_SEPARATOR}{}",
        setting.replace('.', ENV_SEPARATOR).to_uppercase()
    )
}

/// A URL fit for a log line: the password, if any, replaced by `***`.
pub fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                // Only fails for URLs that cannot have a password, which this one has.
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => "<unparsable URL>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Option<HashMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn defaults_are_valid() {
        let s = Settings::load_from(None, env(&[])).expect("defaults load");
        assert_eq!(s, Settings::default());
    }

    #[test]
    fn environment_overrides_file_overrides_defaults() {
        let dir = std::env::temp_dir().join(format!("lb-config-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let file = dir.join("ledgerboard.toml");
        std::fs::write(
            &file,
            "[redis]\nnamespace = \"from-file\"\n[api]\nlisten = \"0.0.0.0:9000\"\n",
        )
        .expect("write file");
        let s = Settings::load_from(
            Some(&file),
            env(&[
                ("LEDGERBOARD__REDIS__NAMESPACE", "from-env"),
                ("LEDGERBOARD__DATABASE__POOL_MAX_SIZE", "7"),
                ("LEDGERBOARD__LOG__FORMAT", "json"),
            ]),
        )
        .expect("load");
        assert_eq!(s.redis.namespace, "from-env");
        assert_eq!(s.api.listen, "0.0.0.0:9000");
        assert_eq!(s.database.pool_max_size, 7);
        assert_eq!(s.log.format, LogFormat::Json);
        assert_eq!(s.database.url, DatabaseSettings::default().url);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn telemetry_settings_are_checked() {
        let load = |pairs: &[(&str, &str)]| Settings::load_from(None, env(pairs));
        let ok = load(&[
            (
                "LEDGERBOARD__TELEMETRY__OTLP_ENDPOINT",
                "http://collector:4317",
            ),
            ("LEDGERBOARD__PROJECTOR__ADMIN_LISTEN", "0.0.0.0:0"),
        ])
        .expect("valid");
        assert_eq!(ok.telemetry.otlp_endpoint, "http://collector:4317");
        for (name, value, setting) in [
            (
                "OTLP_ENDPOINT",
                "https://collector:4317",
                "telemetry.otlp_endpoint",
            ),
            ("OTLP_ENDPOINT", "collector:4317", "telemetry.otlp_endpoint"),
            ("TRACE_SAMPLE_RATIO", "1.5", "telemetry.trace_sample_ratio"),
            ("OTLP_TIMEOUT_MS", "0", "telemetry.otlp_timeout_ms"),
            (
                "OUTBOX_SAMPLE_INTERVAL_MS",
                "10",
                "telemetry.outbox_sample_interval_ms",
            ),
        ] {
            let var = format!("LEDGERBOARD__TELEMETRY__{name}");
            let err = load(&[(var.as_str(), value)]).expect_err(value).to_string();
            assert!(err.contains(setting), "{value}: {err}");
        }
        let err = load(&[("LEDGERBOARD__RECONCILER__ADMIN_LISTEN", "localhost:9102")])
            .expect_err("a host name")
            .to_string();
        assert!(err.contains("reconciler.admin_listen"), "{err}");
    }

    #[test]
    fn bad_settings_name_the_setting() {
        let cases = [
            (
                "LEDGERBOARD__DATABASE__POOL_MAX_SIZE",
                "abc",
                "pool_max_size",
            ),
            (
                "LEDGERBOARD__DATABASE__POOL_MAX_SIZE",
                "0",
                "LEDGERBOARD__DATABASE__POOL_MAX_SIZE",
            ),
            ("LEDGERBOARD__API__LISTEN", "nowhere", "api.listen"),
            ("LEDGERBOARD__REDIS__NAMESPACE", "a{b}", "redis.namespace"),
            ("LEDGERBOARD__REDIS__URL", "http://x", "redis.url"),
            (
                "LEDGERBOARD__DATABASE__URL",
                "postgres://h:notaport/db",
                "database.url",
            ),
            ("LEDGERBOARD__LOG__FORMAT", "xml", "format"),
            ("LEDGERBOARD__DATABASE__URLL", "x", "urll"),
            ("LEDGERBOARD__PROJECTOR__MODE", "sometimes", "mode"),
            (
                "LEDGERBOARD__PROJECTOR__BATCH_SIZE",
                "0",
                "projector.batch_size",
            ),
            (
                "LEDGERBOARD__REDIS__RESPONSE_TIMEOUT_MS",
                "5000",
                "idle_in_transaction",
            ),
        ];
        for (key, value, expected) in cases {
            let err = Settings::load_from(None, env(&[(key, value)]))
                .expect_err(&format!("{key}={value} must be refused"));
            let msg = err.to_string();
            assert!(
                msg.contains(expected),
                "{key}={value}: {msg:?} lacks {expected:?}"
            );
        }
    }

    #[test]
    fn a_lease_must_outlast_a_batch() {
        let err = Settings::load_from(
            None,
            env(&[
                ("LEDGERBOARD__PROJECTOR__MODE", "leased"),
                ("LEDGERBOARD__PROJECTOR__LEASE_MS", "30000"),
            ]),
        )
        .expect_err("30 s lease < 5 x 6 s + 1 s + 3 x 1 s");
        assert!(err.to_string().contains("projector.lease_ms"), "{err}");
        let ok = Settings::load_from(
            None,
            env(&[
                ("LEDGERBOARD__PROJECTOR__MODE", "leased"),
                ("LEDGERBOARD__PROJECTOR__LEASE_MS", "35000"),
            ]),
        )
        .expect("35 s lease");
        assert_eq!(ok.projector.mode, ClaimMode::Leased);
    }

    #[test]
    fn database_url_errors_do_not_leak_passwords() {
        let err = Settings::load_from(
            None,
            env(&[("LEDGERBOARD__DATABASE__URL", "postgres://u:s3cret@h:bad/db")]),
        )
        .expect_err("bad url");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn redaction() {
        assert_eq!(
            redact_url("postgres://u:s3cret@db:5432/x"),
            "postgres://u:***@db:5432/x"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        assert_eq!(redact_url("::"), "<unparsable URL>");
    }
}
