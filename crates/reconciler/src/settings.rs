//! The reconciler's section, `[reconciler]`, read with the shared ones (core's `config`).
//! `lbctl rebuild` reads it too: it runs the reconciler's rebuild, under the same lock.

use std::net::SocketAddr;
use std::time::Duration;

use ledgerboard_core::config::{
    self, ConfigError, Count, DaemonSection, Millis, in_range, invalid,
};
use serde::{Deserialize, Serialize};

/// What the reconciler binary reads: the shared sections and `[reconciler]`.
pub type Settings = config::Settings<Sections>;

/// The reconciler's own sections of the settings file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sections {
    pub reconciler: ReconcilerSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReconcilerSettings {
    /// Pause between the end of one pass (or standby attempt) and the next attempt.
    pub interval_ms: Millis<100, { 7 * 86_400_000 }>,
    /// Source rows read (and Redis members checked in one pipeline) per chunk.
    pub chunk_size: Count<1, 100_000>,
    /// Lifetime of the single-reconciler lock in Redis; renewed while a pass runs.
    pub lock_ttl_ms: Millis<100, 3_600_000>,
    /// How often the lock is renewed; at most half the TTL, so one missed renewal is survived.
    pub lock_renew_ms: Millis<10, 1_800_000>,
    /// Repair rows whose projection is ahead of the source (a newer version in Redis). Off by
    /// default: it may mean a wrong database or a restored backup, which a person should see.
    pub repair_ahead: bool,
    /// Remove members that have no source row.
    pub remove_orphans: bool,
    /// Run a pass at once when Redis comes back as a new server (its run id changed: a restart
    /// or a failover), since a replica that was behind keeps its seals. `lbchaos chaos` turns it
    /// off to prove the projection without any pass.
    pub pass_on_new_redis: bool,
    /// Address of the admin server (`/healthz`, `/readyz`, `/metrics`); port 0 picks a free one.
    pub admin_listen: String,
    /// `/readyz` answers ready while the last successful call to PostgreSQL and to Redis (a
    /// heartbeat on connections of its own) is at most this old.
    pub readiness_stale_ms: Millis<100, 600_000>,
    /// Boards one pass checks at most (0: every board once). The walk continues in the next
    /// pass from the board after the last one finished.
    pub max_boards_per_pass: usize,
    /// Boards a pass's report lists at most: those with drift, a repair or an error first,
    /// clean ones while there is room; the rest only count (`boards_unlisted`). Bounds the
    /// report's memory and size whatever the number of boards.
    pub report_max_boards: usize,
    /// How long a closed period keeps its Redis projection; then it is archived: read from
    /// PostgreSQL (which keeps it for ever), its keys dropped (`periods.rs`).
    pub period_projection_retention_ms: Millis<0, { 3_660 * 86_400_000 }>,
    /// How long after archiving a period its keys are dropped: longer than any api caches a
    /// board's periods (`api.definition_cache_ms`), so no reader is sent to keys that are gone.
    pub period_archive_grace_ms: Millis<0, 86_400_000>,
}

impl Default for ReconcilerSettings {
    fn default() -> Self {
        Self {
            interval_ms: const { Millis::of(300_000) },
            chunk_size: const { Count::of(1_000) },
            lock_ttl_ms: const { Millis::of(30_000) },
            lock_renew_ms: const { Millis::of(10_000) },
            repair_ahead: false,
            remove_orphans: true,
            pass_on_new_redis: true,
            admin_listen: "127.0.0.1:9102".into(),
            readiness_stale_ms: const { Millis::of(10_000) },
            max_boards_per_pass: 0,
            report_max_boards: 1_000,
            period_projection_retention_ms: const { Millis::of(7 * 86_400_000) },
            period_archive_grace_ms: const { Millis::of(600_000) },
        }
    }
}

impl ReconcilerSettings {
    pub fn interval(&self) -> Duration {
        self.interval_ms.get()
    }
    pub fn lock_ttl(&self) -> Duration {
        self.lock_ttl_ms.get()
    }
    pub fn lock_renew(&self) -> Duration {
        self.lock_renew_ms.get()
    }
    pub fn period_projection_retention(&self) -> Duration {
        self.period_projection_retention_ms.get()
    }
    pub fn period_archive_grace(&self) -> Duration {
        self.period_archive_grace_ms.get()
    }
    pub fn readiness_stale(&self) -> Duration {
        self.readiness_stale_ms.get()
    }
    pub fn admin_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.admin_listen
            .parse()
            .map_err(|e| invalid("reconciler.admin_listen", e))
    }
}

impl DaemonSection for Sections {
    fn validate(settings: &Settings) -> Result<(), ConfigError> {
        let r = &settings.reconciler;
        // The renewal margin: a renewal may fail once (a slow Redis) and the lock still holds.
        in_range(
            "reconciler.lock_renew_ms",
            r.lock_renew_ms.ms(),
            10,
            r.lock_ttl_ms.ms() / 2,
        )?;
        r.admin_addr()?;
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
    fn bad_reconciler_settings_name_the_setting() {
        assert_eq!(
            config::check_refusals::<Sections>(&[
                (
                    "LEDGERBOARD__RECONCILER__ADMIN_LISTEN",
                    "localhost:9102",
                    "reconciler.admin_listen",
                ),
                (
                    "LEDGERBOARD__RECONCILER__LOCK_RENEW_MS",
                    "20000",
                    "reconciler.lock_renew_ms",
                ),
                (
                    "LEDGERBOARD__RECONCILER__CHUNK_SIZE",
                    "0",
                    "LEDGERBOARD__RECONCILER__CHUNK_SIZE",
                ),
            ]),
            Ok(())
        );
    }

    /// The reconciler reads no other daemon's section: what is wrong there is not its concern.
    #[test]
    fn other_daemons_sections_do_not_stop_the_reconciler() {
        let ok = load(&[
            ("LEDGERBOARD__PROJECTOR__MODE", "sometimes"),
            ("LEDGERBOARD__API__BODY_LIMIT_BYTES", "1"),
        ])
        .expect("other sections are not read");
        assert_eq!(ok, Settings::default());
    }
}
