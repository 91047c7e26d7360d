//! Settings: built-in defaults, then an optional TOML file, then environment variables
//! `LEDGERBOARD__<SECTION>__<NAME>` (for example `LEDGERBOARD__DATABASE__URL`).
//!
//! Every binary reads the shared sections defined here (`[database]`, `[redis]`,
//! `[shutdown]`, `[log]`, `[telemetry]`, `[events]`) and the sections of its own daemon, defined in the
//! daemon's crate (`settings.rs`) as a [`DaemonSection`]. It does not read the other daemons'
//! sections at all, so a value there that this binary would not understand cannot stop it.
//! A value of the wrong type or outside its bound in a section it reads stops it with a
//! message that names the setting; a name it does not know is ignored and reported with the
//! closest name it knows, and another daemon's section is named as such (see
//! [`Loaded::not_read`]), so a file written for a newer version still loads after a rollback
//! and a typo stays loud. The loading is `load.rs`; each shared section has a file of its own.

mod bounds;
mod database;
mod events;
mod load;
mod log;
mod redis;
mod secret;
mod shutdown;
mod telemetry;

use std::ops::{Deref, DerefMut};

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use bounds::{Count, Millis, OutOfRange};
pub use database::{
    DatabaseSettings, PostgresTarget, SslMode, parse_postgres_target, parse_postgres_url,
};
pub use events::EventsSettings;
pub use load::{Loaded, NotRead, check_refusals, env_map, load, load_from, read_from};
pub use log::{LogFormat, LogSettings};
pub use redis::RedisSettings;
pub use secret::{Redaction, Secret, SecretUrl, UrlPassword, Whole};
pub use shutdown::ShutdownSettings;
pub use telemetry::TelemetrySettings;

pub const ENV_PREFIX: &str = "LEDGERBOARD";
const ENV_SEPARATOR: &str = "__";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // Not a `#[source]`: its text is already in this message, and error chains would repeat it.
    #[error("configuration: {0}")]
    Load(config::ConfigError),
    #[error("configuration: {setting} ({env}): {reason}")]
    Invalid {
        setting: String,
        env: String,
        reason: String,
    },
}

impl From<config::ConfigError> for ConfigError {
    fn from(err: config::ConfigError) -> Self {
        match err {
            // A bound a setting's type refused (see `bounds`): named like the checks of
            // `validate`, with its environment variable.
            config::ConfigError::At {
                error,
                key: Some(key),
                ..
            } if matches!(*error, config::ConfigError::Message(_)) => ConfigError::Invalid {
                env: env_name(&key),
                reason: error.to_string(),
                setting: key,
            },
            other => Self::Load(other),
        }
    }
}

/// The sections every binary reads, and `D`, the sections of its own daemon ([`SharedOnly`]
/// for none). `D`'s sections are reached as if they were fields of their own
/// (`settings.projector`), through `Deref`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Settings<D = SharedOnly> {
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    pub shutdown: ShutdownSettings,
    pub log: LogSettings,
    pub telemetry: TelemetrySettings,
    pub events: EventsSettings,
    /// Read from the same sources in a second pass (see [`read_from`]).
    #[serde(skip)]
    pub daemon: D,
}

/// The names of the shared sections, as in the file.
pub const SHARED_SECTIONS: [&str; 6] = [
    "database",
    "redis",
    "shutdown",
    "log",
    "telemetry",
    "events",
];

/// Every daemon's own sections and the binary that reads each (`reconciler` also `lbctl
/// rebuild`): a binary that meets another daemon's section names it as such instead of
/// calling it unknown. A daemon that adds a section lists it here; until then the other
/// binaries warn about it as an unknown section.
pub const DAEMON_SECTIONS: [(&str, &str); 5] = [
    ("api", "ledgerboard-api"),
    ("auth", "ledgerboard-api"),
    ("projector", "ledgerboard-projector"),
    ("reconciler", "ledgerboard-reconciler"),
    ("dispatcher", "ledgerboard-dispatcher"),
];

impl<D> Deref for Settings<D> {
    type Target = D;
    fn deref(&self) -> &D {
        &self.daemon
    }
}

impl<D> DerefMut for Settings<D> {
    fn deref_mut(&mut self) -> &mut D {
        &mut self.daemon
    }
}

/// A daemon's own sections: a struct whose fields are top-level sections of the file (for the
/// api, `api` and `auth`). Unknown names inside them are ignored (see the module's comment).
pub trait DaemonSection: Default + Clone + Serialize + DeserializeOwned {
    /// The checks no field's type holds, with the shared sections at hand for the bounds that
    /// span both (a projector's workers and the pool sizes).
    fn validate(settings: &Settings<Self>) -> Result<(), ConfigError>;
}

/// No daemon's sections: what `lbctl` reads for its commands, and the tests of the shared
/// sections. (A braced struct, not `()`: the loader reads `D` as a table.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SharedOnly {}

impl DaemonSection for SharedOnly {
    fn validate(_: &Settings<SharedOnly>) -> Result<(), ConfigError> {
        Ok(())
    }
}

/// A set of sections that contains `S`: tests and tools that run several daemons in one
/// process hold all their sections at once and hand each daemon its own.
pub trait Holds<S> {
    fn section(&self) -> S;
}

impl<S: Clone> Holds<S> for S {
    fn section(&self) -> S {
        self.clone()
    }
}

impl<D> Settings<D> {
    /// The shared sections with `daemon` as the daemon's own.
    pub fn with<E>(&self, daemon: E) -> Settings<E> {
        Settings {
            database: self.database.clone(),
            redis: self.redis.clone(),
            shutdown: self.shutdown.clone(),
            log: self.log.clone(),
            telemetry: self.telemetry.clone(),
            events: self.events.clone(),
            daemon,
        }
    }

    /// The shared sections with the part of `D` that one daemon reads.
    pub fn narrow<S>(&self) -> Settings<S>
    where
        D: Holds<S>,
    {
        self.with(self.daemon.section())
    }
}

impl<D: DaemonSection> Settings<D> {
    /// Every check, in section order: the shared sections, then the daemon's own.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.database.validate()?;
        self.redis.validate()?;
        self.log.validate()?;
        self.telemetry.validate()?;
        self.events.validate()?;
        D::validate(self)
    }
}

/// `value` within `min..=max`, or the error that names `setting`: for the bounds that depend
/// on another setting (the types hold the fixed ones).
pub fn in_range(setting: &str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            setting,
            format!("{value} is outside {min}..={max}"),
        ))
    }
}

/// The error for `setting` (dotted: `projector.lease_ms`), naming its environment variable.
pub fn invalid(setting: &str, reason: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid {
        setting: setting.to_owned(),
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
pub(crate) mod tests {
    use std::collections::HashMap;

    use super::*;

    pub(crate) fn env(pairs: &[(&str, &str)]) -> Option<HashMap<String, String>> {
        Some(env_map(pairs))
    }

    /// The shared sections from `env` alone.
    pub(crate) fn load(env: Option<HashMap<String, String>>) -> Result<Settings, ConfigError> {
        load_from::<SharedOnly>(None, env).map(|l| l.settings)
    }

    #[test]
    fn defaults_are_valid() {
        let s = load(env(&[])).expect("defaults load");
        assert_eq!(s, Settings::default());
    }

    /// Passwords in the URLs never reach a log line, a settings dump or an assertion message
    /// built from the settings: `Debug` and `Serialize` show them as `***`.
    #[test]
    fn secrets_never_show_in_debug_or_serialize() {
        let settings = load(env(&[
            (
                "LEDGERBOARD__DATABASE__URL",
                "postgres://u:s3cret-db@db:5432/x",
            ),
            (
                "LEDGERBOARD__DATABASE__DIRECT_URL",
                "postgres://u:s3cret-direct@db:5432/x",
            ),
            (
                "LEDGERBOARD__REDIS__URL",
                "redis://:s3cret-redis@cache:6379",
            ),
        ]))
        .expect("load");
        let shown = [
            format!("{settings:?}"),
            format!("{settings:#?}"),
            serde_json::to_string(&settings).expect("serialize"),
        ];
        for text in &shown {
            assert!(!text.contains("s3cret"), "{text}");
        }
        assert!(
            shown[2].contains("postgres://u:***@db:5432/x"),
            "{}",
            shown[2]
        );
        assert!(shown[2].contains("redis://:***@cache:6379"), "{}", shown[2]);
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
