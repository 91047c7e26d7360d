//! The dispatcher's section, `[dispatcher]`, read with the shared ones (core's `config`; the
//! event log's upkeep reads `[events]`).

use std::net::SocketAddr;
use std::time::Duration;

use ledgerboard_core::config::{
    self, ConfigError, Count, DaemonSection, Millis, in_range, invalid,
};
use ledgerboard_core::webhook::lane::Circuit;
use serde::{Deserialize, Serialize};

/// What the dispatcher binary reads: the shared sections and `[dispatcher]`.
pub type Settings = config::Settings<Sections>;

/// The dispatcher's own sections of the settings file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sections {
    pub dispatcher: DispatcherSettings,
}

const DAY_MS: u64 = 86_400_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DispatcherSettings {
    /// Address of the admin server (`/healthz`, `/readyz`, `/metrics`); port 0 picks a free one.
    pub admin_listen: String,
    /// Deliveries in flight at once in this process: each is one lane (or one requeued parked
    /// event) at a time, so a slow receiver holds only its own lanes' slots.
    pub workers: Count<1, 1_024>,
    /// Bound on opening a connection to a receiver: TCP and, for https, the TLS handshake.
    pub connect_timeout_ms: Millis<10, 60_000>,
    /// Bound on one delivery as a whole: connecting, sending, the answer's head and body.
    pub request_timeout_ms: Millis<100, 300_000>,
    /// Failed attempts after which an event is parked and its lane moves on.
    pub max_attempts: u32,
    /// The wait after a first failure; it doubles per attempt up to `backoff_max_ms`, each
    /// wait drawn in its upper half (jitter).
    pub backoff_first_ms: Millis<10, { DAY_MS }>,
    pub backoff_max_ms: Millis<10, { DAY_MS }>,
    /// Consecutive failed deliveries of a subscription (any lane) that open its circuit: no
    /// delivery for `circuit_open_ms`, then one trial.
    pub circuit_threshold: u32,
    pub circuit_open_ms: Millis<100, { DAY_MS }>,
    /// How long a claimed lane stays this dispatcher's (database clock); every delivered event
    /// extends it. A dispatcher that dies holds its lanes this long at most.
    pub lease_ms: Millis<1_000, 3_600_000>,
    /// Longest wait between claims when the log does not move (retries that come due, lanes
    /// given back by others).
    pub poll_interval_ms: Millis<10, 60_000>,
    /// Events read from a lane at once.
    pub batch_size: Count<1, 1_000>,
    /// Deliver to `http://` URLs too. Off by default: only `https://` receivers get events; an
    /// http subscription's deliveries fail with an error saying so. For local stacks and tests.
    pub allow_http: bool,
    /// Deliver to receivers at loopback, private, link-local and other non-public addresses
    /// (`address.rs`). Off by default: a subscription's URL must not reach inside the
    /// operator's network (server-side request forgery); a receiver whose host resolves only
    /// to such addresses gets nothing, and its lane's error says so. For local stacks and
    /// tests, and for receivers deliberately inside the cluster.
    pub allow_private_addresses: bool,
    /// A PEM file of the CAs that https receivers' certificates must chain to; empty: the
    /// system's roots (the image's ca-certificates). For receivers behind a private CA.
    pub ca_file: String,
    /// `/readyz` answers ready while the last successful call to PostgreSQL (a heartbeat on a
    /// connection of its own) is at most this old. Redis is not needed.
    pub readiness_stale_ms: Millis<100, 600_000>,
}

impl Default for DispatcherSettings {
    fn default() -> Self {
        Self {
            admin_listen: "127.0.0.1:9103".into(),
            workers: const { Count::of(32) },
            connect_timeout_ms: const { Millis::of(3_000) },
            request_timeout_ms: const { Millis::of(10_000) },
            max_attempts: 12,
            backoff_first_ms: const { Millis::of(1_000) },
            backoff_max_ms: const { Millis::of(600_000) },
            circuit_threshold: 20,
            circuit_open_ms: const { Millis::of(60_000) },
            lease_ms: const { Millis::of(60_000) },
            poll_interval_ms: const { Millis::of(500) },
            batch_size: const { Count::of(100) },
            allow_http: false,
            allow_private_addresses: false,
            ca_file: String::new(),
            readiness_stale_ms: const { Millis::of(10_000) },
        }
    }
}

impl DispatcherSettings {
    pub fn admin_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.admin_listen
            .parse()
            .map_err(|e| invalid("dispatcher.admin_listen", e))
    }
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout_ms.get()
    }
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout_ms.get()
    }
    pub fn lease(&self) -> Duration {
        self.lease_ms.get()
    }
    pub fn poll_interval(&self) -> Duration {
        self.poll_interval_ms.get()
    }
    pub fn readiness_stale(&self) -> Duration {
        self.readiness_stale_ms.get()
    }
    pub fn circuit(&self) -> Circuit {
        Circuit {
            threshold: i32::try_from(self.circuit_threshold).unwrap_or(i32::MAX),
            open_for: self.circuit_open_ms.get(),
        }
    }
    pub fn max_attempts(&self) -> i32 {
        i32::try_from(self.max_attempts).unwrap_or(i32::MAX)
    }
}

/// The longest a lane's lease must cover between two extensions: reading the lane's next
/// events (two round trips), one delivery, and the advance that extends it.
pub fn lease_needed<D>(settings: &config::Settings<D>, d: &DispatcherSettings) -> Duration {
    d.request_timeout() + 3 * settings.database.round_trip_timeout()
}

impl DaemonSection for Sections {
    fn validate(settings: &Settings) -> Result<(), ConfigError> {
        let d = &settings.dispatcher;
        d.admin_addr()?;
        in_range(
            "dispatcher.max_attempts",
            u64::from(d.max_attempts),
            1,
            1_000,
        )?;
        in_range(
            "dispatcher.circuit_threshold",
            u64::from(d.circuit_threshold),
            1,
            1_000_000,
        )?;
        in_range(
            "dispatcher.backoff_max_ms",
            d.backoff_max_ms.ms(),
            d.backoff_first_ms.ms(),
            DAY_MS,
        )?;
        if d.connect_timeout_ms.ms() > d.request_timeout_ms.ms() {
            return Err(invalid(
                "dispatcher.connect_timeout_ms",
                "must not exceed dispatcher.request_timeout_ms (the bound on the whole delivery)",
            ));
        }
        let needed = lease_needed(settings, d).as_millis() as u64;
        if d.lease_ms.ms() <= needed {
            return Err(invalid(
                "dispatcher.lease_ms",
                format!(
                    "{} ms must exceed a delivery's {needed} ms (dispatcher.request_timeout_ms + 3 database round trips of statement_timeout + 1 s)",
                    d.lease_ms.ms()
                ),
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
        assert!(!Settings::default().dispatcher.allow_http);
        assert!(!Settings::default().dispatcher.allow_private_addresses);
    }

    #[test]
    fn bad_dispatcher_settings_name_the_setting() {
        assert_eq!(
            config::check_refusals::<Sections>(&[
                (
                    "LEDGERBOARD__DISPATCHER__ADMIN_LISTEN",
                    "localhost:9103",
                    "dispatcher.admin_listen",
                ),
                (
                    "LEDGERBOARD__DISPATCHER__WORKERS",
                    "0",
                    "dispatcher.workers"
                ),
                (
                    "LEDGERBOARD__DISPATCHER__MAX_ATTEMPTS",
                    "0",
                    "dispatcher.max_attempts",
                ),
                (
                    "LEDGERBOARD__DISPATCHER__BACKOFF_MAX_MS",
                    "100",
                    "dispatcher.backoff_max_ms",
                ),
                (
                    "LEDGERBOARD__DISPATCHER__LEASE_MS",
                    "20000",
                    "dispatcher.lease_ms",
                ),
                (
                    "LEDGERBOARD__DISPATCHER__CONNECT_TIMEOUT_MS",
                    "20000",
                    "dispatcher.connect_timeout_ms",
                ),
            ]),
            Ok(())
        );
    }

    /// The dispatcher reads no other daemon's section.
    #[test]
    fn other_daemons_sections_do_not_stop_the_dispatcher() {
        let ok = load(&[
            ("LEDGERBOARD__API__LISTEN", "nowhere"),
            ("LEDGERBOARD__PROJECTOR__WORKERS", "0"),
        ])
        .expect("other sections are not read");
        assert_eq!(ok, Settings::default());
    }
}
