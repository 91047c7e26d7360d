//! The projector's section, `[projector]`, read with the shared ones (core's `config`).

use std::net::SocketAddr;
use std::time::Duration;

use ledgerboard_core::config::{
    self, ConfigError, Count, DaemonSection, Millis, in_range, invalid,
};
use serde::{Deserialize, Serialize};

/// What the projector binary reads: the shared sections and `[projector]`.
pub type Settings = config::Settings<Sections>;

/// The projector's own sections of the settings file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sections {
    pub projector: ProjectorSettings,
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

const DAY_MS: u64 = 86_400_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProjectorSettings {
    pub mode: ClaimMode,
    /// Claim loops per process; replicas are the main way to scale.
    pub workers: Count<1, 64>,
    /// Most rows claimed and applied in one round trip.
    pub batch_size: Count<1, 10_000>,
    /// Longest wait between claims when no notification arrives (the fallback to LISTEN).
    pub poll_interval_ms: Millis<10, 600_000>,
    /// Leased mode: how long a claimed row stays reserved for its projector (database clock).
    pub lease_ms: Millis<100, 3_600_000>,
    /// Failed attempts after which a row is parked (kept out of the claim until requeued).
    pub max_attempts: u32,
    /// Retry delay after the first failure; doubles per attempt up to `retry_max_ms`.
    pub retry_base_ms: Millis<1, 3_600_000>,
    /// At least `retry_base_ms`.
    pub retry_max_ms: Millis<1, { DAY_MS }>,
    /// Longest back-off while Redis is unreachable or out of memory.
    pub outage_backoff_max_ms: Millis<10, 600_000>,
    /// How long Redis remembers that an event was applied (its marker's TTL). It must outlast
    /// the longest a row can stay applied but unpublished (a lease, a claim's transaction):
    /// docs/projector.md, "Event markers".
    pub event_marker_ttl_ms: Millis<1_000, { 30 * DAY_MS }>,
    /// Published outbox rows older than this are deleted; 0 keeps them.
    pub published_retention_ms: Millis<0, { 365 * DAY_MS }>,
    /// `score_events` rows older than this are deleted; 0 (the default) keeps them. An event id
    /// older than the window could then apply twice.
    pub event_retention_ms: Millis<0, { 3_650 * DAY_MS }>,
    pub retention_interval_ms: Millis<100, { DAY_MS }>,
    /// Rows deleted per retention transaction.
    pub retention_batch: Count<1, 100_000>,
    /// How often Redis's eviction policy and memory use are checked.
    pub redis_check_interval_ms: Millis<100, { DAY_MS }>,
    pub unsafe_redis: UnsafeRedisAction,
    /// Fraction of `maxmemory` above which Redis counts as close to its limit.
    pub redis_memory_warn_ratio: f64,
    /// Address of the admin server (`/healthz`, `/readyz`, `/metrics`); port 0 picks a free one.
    pub admin_listen: String,
    /// `/readyz` answers ready while the last successful call to PostgreSQL and to Redis (a
    /// heartbeat on connections of its own) is at most this old.
    pub readiness_stale_ms: Millis<100, 600_000>,
}

impl Default for ProjectorSettings {
    fn default() -> Self {
        Self {
            mode: ClaimMode::Transactional,
            workers: const { Count::of(1) },
            batch_size: const { Count::of(500) },
            poll_interval_ms: const { Millis::of(1_000) },
            lease_ms: const { Millis::of(60_000) },
            max_attempts: 10,
            retry_base_ms: const { Millis::of(500) },
            retry_max_ms: const { Millis::of(300_000) },
            outage_backoff_max_ms: const { Millis::of(5_000) },
            event_marker_ttl_ms: const { Millis::of(600_000) },
            published_retention_ms: const { Millis::of(3_600_000) },
            event_retention_ms: const { Millis::of(0) },
            retention_interval_ms: const { Millis::of(60_000) },
            retention_batch: const { Count::of(1_000) },
            redis_check_interval_ms: const { Millis::of(60_000) },
            unsafe_redis: UnsafeRedisAction::Warn,
            redis_memory_warn_ratio: 0.9,
            admin_listen: "127.0.0.1:9101".into(),
            readiness_stale_ms: const { Millis::of(10_000) },
        }
    }
}

impl ProjectorSettings {
    pub fn poll_interval(&self) -> Duration {
        self.poll_interval_ms.get()
    }
    pub fn lease(&self) -> Duration {
        self.lease_ms.get()
    }
    pub fn outage_backoff_max(&self) -> Duration {
        self.outage_backoff_max_ms.get()
    }
    /// `event_marker_ttl_ms`, and in leased mode at least twice `lease_ms`: a row applied by a
    /// projector that then stalls is delivered again once its lease runs out, and its marker
    /// must still be there to make that a `duplicate` (docs/projector.md, "Event markers").
    pub fn event_marker_ttl(&self) -> Duration {
        let ttl = self.event_marker_ttl_ms.get();
        match self.mode {
            ClaimMode::Leased => ttl.max(2 * self.lease_ms.get()),
            ClaimMode::Transactional => ttl,
        }
    }
    pub fn retention_interval(&self) -> Duration {
        self.retention_interval_ms.get()
    }
    pub fn redis_check_interval(&self) -> Duration {
        self.redis_check_interval_ms.get()
    }
    pub fn readiness_stale(&self) -> Duration {
        self.readiness_stale_ms.get()
    }
    pub fn admin_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.admin_listen
            .parse()
            .map_err(|e| invalid("projector.admin_listen", e))
    }
}

/// The longest a projection batch may wait on Redis: a connection, then up to three round
/// trips (apply, reload the script after NOSCRIPT, apply again).
pub fn redis_time_per_batch<D>(settings: &config::Settings<D>) -> Duration {
    settings.redis.connect_timeout() + 3 * settings.redis.response_timeout()
}

/// The bound on one projection batch: up to five database round trips (BEGIN, claim, publish,
/// fail, COMMIT) and its time on Redis. Past it the batch is abandoned and its connection
/// dropped.
pub fn batch_deadline<D>(settings: &config::Settings<D>) -> Duration {
    5 * settings.database.round_trip_timeout() + redis_time_per_batch(settings)
}

impl DaemonSection for Sections {
    fn validate(settings: &Settings) -> Result<(), ConfigError> {
        let p = &settings.projector;
        in_range(
            "projector.max_attempts",
            u64::from(p.max_attempts),
            1,
            1_000,
        )?;
        in_range(
            "projector.retry_max_ms",
            p.retry_max_ms.ms(),
            p.retry_base_ms.ms(),
            DAY_MS,
        )?;
        if !(0.0..=1.0).contains(&p.redis_memory_warn_ratio) {
            return Err(invalid(
                "projector.redis_memory_warn_ratio",
                "must be between 0 and 1",
            ));
        }
        p.admin_addr()?;
        // While a batch waits on Redis, its transaction (transactional mode) sits idle and its
        // lease (leased mode) runs: neither may run out before the batch's own deadline does.
        let redis_ms = redis_time_per_batch(settings).as_millis() as u64;
        let idle_in_tx = 2 * settings.database.statement_timeout_ms.ms();
        if p.mode == ClaimMode::Transactional && idle_in_tx <= redis_ms {
            return Err(invalid(
                "redis.response_timeout_ms",
                format!(
                    "a batch may wait {redis_ms} ms on Redis (redis.connect_timeout_ms + 3 x redis.response_timeout_ms), \
                     which must stay below idle_in_transaction_session_timeout (2 x database.statement_timeout_ms = {idle_in_tx} ms)"
                ),
            ));
        }
        let deadline_ms = batch_deadline(settings).as_millis() as u64;
        if p.mode == ClaimMode::Leased && p.lease_ms.ms() <= deadline_ms {
            return Err(invalid(
                "projector.lease_ms",
                format!(
                    "{} ms must exceed a batch's deadline of {deadline_ms} ms \
                     (5 database round trips of statement_timeout + 1 s, plus redis.connect_timeout_ms + 3 x redis.response_timeout_ms)",
                    p.lease_ms.ms()
                ),
            ));
        }
        // One connection per worker, one for retention, one for the outbox gauges and the
        // readiness probe: a worker never waits for a connection behind them.
        let workers = p.workers.get();
        if workers + 2 > settings.database.pool_max_size.get() {
            return Err(invalid(
                "projector.workers",
                format!(
                    "{workers} workers (+1 for retention, +1 for telemetry and probes) need database.pool_max_size >= {}",
                    workers + 2
                ),
            ));
        }
        if workers > settings.redis.pool_max_size.get() {
            return Err(invalid(
                "projector.workers",
                format!("{workers} workers need redis.pool_max_size >= {workers}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        config::load_from::<Sections>(None, Some(config::env_map(pairs))).map(|l| l.settings)
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(load(&[]).expect("defaults load"), Settings::default());
    }

    #[test]
    fn a_marker_outlasts_twice_a_lease() {
        let s = load(&[]).expect("defaults load");
        assert_eq!(s.projector.event_marker_ttl(), Duration::from_secs(600));
        let s = load(&[
            ("LEDGERBOARD__PROJECTOR__MODE", "leased"),
            ("LEDGERBOARD__PROJECTOR__LEASE_MS", "900000"),
        ])
        .expect("leased loads");
        assert_eq!(s.projector.event_marker_ttl(), Duration::from_secs(1_800));
    }

    #[test]
    fn bad_projector_settings_name_the_setting() {
        assert_eq!(
            config::check_refusals::<Sections>(&[
                ("LEDGERBOARD__PROJECTOR__MODE", "sometimes", "mode"),
                (
                    "LEDGERBOARD__PROJECTOR__BATCH_SIZE",
                    "0",
                    "projector.batch_size",
                ),
                (
                    "LEDGERBOARD__PROJECTOR__ADMIN_LISTEN",
                    "localhost:9101",
                    "projector.admin_listen",
                ),
                (
                    "LEDGERBOARD__REDIS__RESPONSE_TIMEOUT_MS",
                    "5000",
                    "idle_in_transaction",
                ),
                (
                    "LEDGERBOARD__PROJECTOR__WORKERS",
                    "15",
                    "database.pool_max_size >= 17",
                ),
                (
                    "LEDGERBOARD__PROJECTOR__RETRY_MAX_MS",
                    "100",
                    "projector.retry_max_ms",
                ),
            ]),
            Ok(())
        );
        let ok = load(&[("LEDGERBOARD__PROJECTOR__ADMIN_LISTEN", "0.0.0.0:0")]).expect("valid");
        assert_eq!(ok.projector.admin_listen, "0.0.0.0:0");
    }

    #[test]
    fn a_lease_must_outlast_a_batch() {
        let err = load(&[
            ("LEDGERBOARD__PROJECTOR__MODE", "leased"),
            ("LEDGERBOARD__PROJECTOR__LEASE_MS", "30000"),
        ])
        .expect_err("30 s lease < 5 x 6 s + 1 s + 3 x 1 s");
        assert!(err.to_string().contains("projector.lease_ms"), "{err}");
        let ok = load(&[
            ("LEDGERBOARD__PROJECTOR__MODE", "leased"),
            ("LEDGERBOARD__PROJECTOR__LEASE_MS", "35000"),
        ])
        .expect("35 s lease");
        assert_eq!(ok.projector.mode, ClaimMode::Leased);
    }

    /// The projector reads no other daemon's section: what is wrong there is not its concern.
    #[test]
    fn other_daemons_sections_do_not_stop_the_projector() {
        let ok = load(&[
            ("LEDGERBOARD__API__LISTEN", "nowhere"),
            ("LEDGERBOARD__RECONCILER__CHUNK_SIZE", "0"),
            ("LEDGERBOARD__AUTH__READS", "sometimes"),
        ])
        .expect("other sections are not read");
        assert_eq!(ok, Settings::default());
    }
}
