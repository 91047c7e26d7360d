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
    /// PEM file of the CA certificates that `sslmode=verify-ca` / `verify-full` trust (an
    /// `sslrootcert` in the URL wins). Empty: the system's roots.
    pub ca_file: String,
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
            ca_file: String::new(),
        }
    }
}

impl DatabaseSettings {
    /// The bounds the types cannot hold: the URLs parse, and a transaction pooler comes with a
    /// direct URL.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut modes = vec![parse_postgres_target(&self.url)?.ssl_mode];
        if !self.direct_url.is_empty() {
            let direct = parse_postgres_target(&self.direct_url)
                .map_err(|_| invalid("database.direct_url", "not a PostgreSQL URL"))?;
            modes.push(direct.ssl_mode);
        } else if self.transaction_pooler {
            return Err(invalid(
                "database.direct_url",
                "required with database.transaction_pooler: LISTEN and the migration lock need a session of their own",
            ));
        }
        // A CA file that no connection would check is a configuration that looks safer than it
        // is (libpq would verify with it under `require`; this build does not): say so.
        if let Some(weak) = modes
            .iter()
            .find(|m| !matches!(m, SslMode::VerifyCa | SslMode::VerifyFull))
            .filter(|_| !self.ca_file.is_empty())
        {
            return Err(invalid(
                "database.ca_file",
                format!(
                    "set, but a database URL has sslmode={}, which checks no certificate: use sslmode=verify-full (or verify-ca)",
                    weak.as_str()
                ),
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

/// Parses a PostgreSQL URL; the error never repeats the URL (it may hold a password). For a
/// plain connection (a test's admin session): `sslmode` is mapped as [`parse_postgres_target`]
/// says, and the TLS parts are dropped.
pub fn parse_postgres_url(url: &str) -> Result<tokio_postgres::Config, ConfigError> {
    parse_postgres_target(url).map(|target| target.config)
}

/// libpq's `sslmode`, all five values this build honours (`allow` is refused: it would
/// try a plain connection first, which no deployment wants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// TLS when the server offers it, else plain; the certificate is not checked. libpq's
    /// default, and so the default here.
    #[default]
    Prefer,
    /// TLS or no connection; the certificate is not checked (encrypted, not authenticated).
    Require,
    /// TLS, and the certificate must chain to a trusted CA; the host name is not checked.
    VerifyCa,
    /// TLS, the certificate must chain to a trusted CA and name the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Option<SslMode> {
        Some(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// A PostgreSQL URL taken apart: what tokio-postgres connects to, and the TLS it needs.
#[derive(Debug, Clone)]
pub struct PostgresTarget {
    /// Its `ssl_mode` is tokio-postgres's: `disable`, `prefer`, or `require` for the three
    /// modes that need TLS (the verification is the connector's, `db/tls.rs`).
    pub config: tokio_postgres::Config,
    pub ssl_mode: SslMode,
    /// The URL's `sslrootcert`, if it has one.
    pub root_cert: Option<String>,
}

/// Parses a PostgreSQL URL (`postgres://…?sslmode=…` or `host=… sslmode=…`), taking out
/// `sslmode` and `sslrootcert` first: tokio-postgres knows neither `verify-ca` /
/// `verify-full` nor `sslrootcert`. The error never repeats the URL.
pub fn parse_postgres_target(url: &str) -> Result<PostgresTarget, ConfigError> {
    let (rest, ssl_mode, root_cert) = split_tls_params(url)?;
    let mut config = rest
        .parse::<tokio_postgres::Config>()
        .map_err(|e| invalid("database.url", format!("not a PostgreSQL URL: {e}")))?;
    config.ssl_mode(match ssl_mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            tokio_postgres::config::SslMode::Require
        }
    });
    Ok(PostgresTarget {
        config,
        ssl_mode,
        root_cert,
    })
}

/// The URL without `sslmode` and `sslrootcert`, and their values (the last one wins, as in
/// libpq).
fn split_tls_params(url: &str) -> Result<(String, SslMode, Option<String>), ConfigError> {
    let mut ssl_mode = SslMode::default();
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| -> Result<bool, ConfigError> {
        match key {
            "sslmode" => {
                ssl_mode = SslMode::parse(value).ok_or_else(|| {
                    invalid(
                        "database.url",
                        format!(
                            "sslmode {value:?} is not one of disable, prefer, require, verify-ca, verify-full"
                        ),
                    )
                })?;
                Ok(true)
            }
            "sslrootcert" => {
                root_cert = Some(value.to_owned()).filter(|v| !v.is_empty());
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    if !url.contains("sslmode") && !url.contains("sslrootcert") {
        return Ok((url.to_owned(), ssl_mode, root_cert));
    }
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            None => url.to_owned(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (key, value) = url::form_urlencoded::parse(pair.as_bytes())
                        .next()
                        .unwrap_or_default();
                    if !take(&key, &value)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        // key=value form: each other pair is kept as written (quotes and escapes included).
        let mut kept = Vec::new();
        for (raw, key, value) in key_value_pairs(url) {
            if !take(&key, &value)? {
                kept.push(raw);
            }
        }
        kept.join(" ")
    };
    Ok((rest, ssl_mode, root_cert))
}

/// The pairs of a libpq `key=value` string: each as written, its key, and its value unquoted
/// (`'…'` with `\'` and `\\` escapes). What does not parse is kept whole as one pair with
/// an empty key, for tokio-postgres to refuse.
fn key_value_pairs(text: &str) -> Vec<(&str, String, String)> {
    let mut pairs = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else {
            pairs.push((rest, String::new(), String::new()));
            break;
        };
        let key = rest[..eq].trim().to_owned();
        let after = rest[eq + 1..].trim_start();
        let value_start = rest.len() - after.len();
        let mut value = String::new();
        let mut end = rest.len();
        if let Some(quoted) = after.strip_prefix('\'') {
            let mut chars = quoted.char_indices();
            let mut closed = false;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '\'' => {
                        end = value_start + 1 + i + 1;
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                pairs.push((rest, String::new(), String::new()));
                break;
            }
        } else {
            let len = after.find(char::is_whitespace).unwrap_or(after.len());
            value.push_str(&after[..len]);
            end = value_start + len;
        }
        pairs.push((&rest[..end], key, value));
        rest = rest[end..].trim_start();
    }
    pairs
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
                (
                    "LEDGERBOARD__DATABASE__URL",
                    "postgres://h/db?sslmode=allow",
                    "database.url",
                ),
                (
                    "LEDGERBOARD__DATABASE__CA_FILE",
                    "/ca.pem",
                    "database.ca_file"
                ),
            ]),
            Ok(())
        );
    }

    #[test]
    fn sslmode_and_sslrootcert_are_taken_out_of_the_url() {
        use super::{SslMode, parse_postgres_target};
        use tokio_postgres::config::SslMode as Pg;
        for (url, mode, pg, root) in [
            ("postgres://u@h/db", SslMode::Prefer, Pg::Prefer, None),
            (
                "postgres://u:p%40ss@h:5433/db?sslmode=verify-full&application_name=x&sslrootcert=%2Fca.pem",
                SslMode::VerifyFull,
                Pg::Require,
                Some("/ca.pem"),
            ),
            (
                "postgresql://h/db?sslmode=verify-ca",
                SslMode::VerifyCa,
                Pg::Require,
                None,
            ),
            (
                "postgres://h/db?sslmode=require",
                SslMode::Require,
                Pg::Require,
                None,
            ),
            (
                "postgres://h/db?sslmode=disable",
                SslMode::Disable,
                Pg::Disable,
                None,
            ),
            (
                "host=h dbname=db sslmode=verify-full sslrootcert='/c a.pem'",
                SslMode::VerifyFull,
                Pg::Require,
                Some("/c a.pem"),
            ),
        ] {
            let target = parse_postgres_target(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(target.ssl_mode, mode, "{url}");
            assert_eq!(target.config.get_ssl_mode(), pg, "{url}");
            assert_eq!(target.root_cert.as_deref(), root, "{url}");
        }
        let kv = parse_postgres_target("host=h password='a  b\\'c' sslmode=require dbname = db")
            .expect("key=value with a quoted password");
        assert_eq!(kv.config.get_password(), Some(&b"a  b'c"[..]));
        assert_eq!(kv.config.get_dbname(), Some("db"));
        assert_eq!(kv.ssl_mode, SslMode::Require);
        let with_rest = parse_postgres_target(
            "postgres://u:p%40ss@h:5433/db?sslmode=verify-full&application_name=x",
        )
        .expect("parses");
        assert_eq!(with_rest.config.get_application_name(), Some("x"));
        assert_eq!(with_rest.config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(with_rest.config.get_ports(), &[5433]);
    }

    #[test]
    fn a_ca_file_needs_a_verifying_sslmode() {
        let ok = load(env(&[
            (
                "LEDGERBOARD__DATABASE__URL",
                "postgres://h/db?sslmode=verify-full",
            ),
            ("LEDGERBOARD__DATABASE__CA_FILE", "/ca.pem"),
        ]))
        .expect("verify-full with a CA file");
        assert_eq!(ok.database.ca_file, "/ca.pem");
        let err = load(env(&[
            (
                "LEDGERBOARD__DATABASE__URL",
                "postgres://h/db?sslmode=verify-full",
            ),
            (
                "LEDGERBOARD__DATABASE__DIRECT_URL",
                "postgres://h2/db?sslmode=require",
            ),
            ("LEDGERBOARD__DATABASE__CA_FILE", "/ca.pem"),
        ]))
        .expect_err("the direct URL checks nothing");
        assert!(err.to_string().contains("sslmode=require"), "{err}");
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
