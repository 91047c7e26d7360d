//! `[database]`: where PostgreSQL is and how long each step may take.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Count, Millis, SecretUrl, invalid};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DatabaseSettings {
    /// `postgres://user:password@host:port/dbname`. Never shown with its password.
    pub url: SecretUrl,
    /// Upper bound on connections this process opens.
    pub pool_max_size: Count<1, 1_000>,
    /// Bound on establishing one connection (TCP + start-up).
    pub connect_timeout_ms: Millis<10, 600_000>,
    /// Bound on waiting for a free pooled connection; past it a request gets 503.
    pub pool_wait_timeout_ms: Millis<1, 600_000>,
    /// `statement_timeout` of every session, and (with a margin) the client-side bound on one
    /// round trip.
    pub statement_timeout_ms: Millis<10, 3_600_000>,
    /// How long a daemon waits for PostgreSQL to answer at start-up before giving up.
    pub startup_timeout_ms: Millis<0, 86_400_000>,
    /// `url` leads to a transaction pooler (PgBouncer `pool_mode = transaction`): statements
    /// are sent unnamed (no prepared statement outlives its round trip) and no start-up
    /// `options` are sent, so `statement_timeout` must be set on the role (see
    /// docs/operations.md).
    pub transaction_pooler: bool,
    /// A direct connection to PostgreSQL for what needs a session of its own: the projectors'
    /// LISTEN and the migration lock. Empty: `url`. Never shown with its password.
    pub direct_url: SecretUrl,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: "postgres://postgres@127.0.0.1:5432/ledgerboard".into(),
            pool_max_size: const { Count::of(16) },
            connect_timeout_ms: const { Millis::of(2_000) },
            pool_wait_timeout_ms: const { Millis::of(2_000) },
            statement_timeout_ms: const { Millis::of(5_000) },
            startup_timeout_ms: const { Millis::of(120_000) },
            transaction_pooler: false,
            direct_url: SecretUrl::default(),
        }
    }
}

impl DatabaseSettings {
    /// The bounds the types cannot hold: the URLs parse, and a transaction pooler comes with a
    /// direct URL.
    pub fn validate(&self) -> Result<(), ConfigError> {
        parse_postgres_url(&self.url)?;
        if !self.direct_url.is_empty() {
            parse_postgres_url(&self.direct_url)
                .map_err(|_| invalid("database.direct_url", "not a PostgreSQL URL"))?;
        } else if self.transaction_pooler {
            return Err(invalid(
                "database.direct_url",
                "required with database.transaction_pooler: LISTEN and the migration lock need a session of their own",
            ));
        }
        Ok(())
    }

    /// Where LISTEN and migrations connect: `direct_url`, or `url` when it is empty.
    pub fn session_url(&self) -> &str {
        if self.direct_url.is_empty() {
            &self.url
        } else {
            &self.direct_url
        }
    }

    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout_ms.get()
    }
    pub fn pool_wait_timeout(&self) -> Duration {
        self.pool_wait_timeout_ms.get()
    }
    pub fn statement_timeout(&self) -> Duration {
        self.statement_timeout_ms.get()
    }
    /// Client-side bound on one round trip: the server's statement timeout plus a margin for
    /// the network, so the server normally cancels first and says why.
    pub fn round_trip_timeout(&self) -> Duration {
        self.statement_timeout() + Duration::from_millis(1_000)
    }
    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout_ms.get()
    }
}

/// Parses a PostgreSQL URL; the error never repeats the URL (it may hold a password).
pub fn parse_postgres_url(url: &str) -> Result<tokio_postgres::Config, ConfigError> {
    url.parse::<tokio_postgres::Config>()
        .map_err(|e| invalid("database.url", format!("not a PostgreSQL URL: {e}")))
}

#[cfg(test)]
mod tests {
    use crate::config::tests::{env, load};

    #[test]
    fn bad_database_settings_name_the_setting() {
        assert_eq!(
            crate::config::check_refusals::<crate::config::SharedOnly>(&[
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
                (
                    "LEDGERBOARD__DATABASE__URL",
                    "postgres://h:notaport/db",
                    "database.url",
                ),
                (
                    "LEDGERBOARD__DATABASE__TRANSACTION_POOLER",
                    "true",
                    "database.direct_url",
                ),
            ]),
            Ok(())
        );
    }

    #[test]
    fn database_url_errors_do_not_leak_passwords() {
        let err = load(env(&[(
            "LEDGERBOARD__DATABASE__URL",
            "postgres://u:s3cret@h:bad/db",
        )]))
        .expect_err("bad url");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }
}
