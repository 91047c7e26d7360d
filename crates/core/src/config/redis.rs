//! `[redis]`: where the projection's Redis is and how long each call may take.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Count, Millis, SecretUrl, invalid};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RedisSettings {
    /// The server's URL; in cluster mode, one or more nodes' URLs separated by commas (the
    /// seeds from which the client learns the cluster). Never shown with its password.
    pub url: SecretUrl,
    /// `url` names Redis Cluster nodes: keys are placed by slot and pipelines split per slot.
    pub cluster: bool,
    /// Prefix of every key (see `keys`), so deployments and tests can share one Redis.
    pub namespace: String,
    pub pool_max_size: Count<1, 1_000>,
    pub connect_timeout_ms: Millis<10, 600_000>,
    pub response_timeout_ms: Millis<10, 600_000>,
    /// PEM file of the CA certificates a `rediss://` server's certificate must chain to.
    /// Empty: the system's roots.
    pub ca_file: String,
    /// PEM client certificate (chain) presented to a `rediss://` server that asks for one
    /// (`tls-auth-clients`). Set with `client_key_file`, or not at all.
    pub client_cert_file: String,
    /// PEM private key of `client_cert_file`.
    pub client_key_file: String,
}

impl Default for RedisSettings {
    fn default() -> Self {
        Self {
            url: "redis://127.0.0.1:6379".into(),
            cluster: false,
            namespace: "ledgerboard".into(),
            pool_max_size: const { Count::of(16) },
            connect_timeout_ms: const { Millis::of(1_000) },
            response_timeout_ms: const { Millis::of(1_000) },
            ca_file: String::new(),
            client_cert_file: String::new(),
            client_key_file: String::new(),
        }
    }
}

impl RedisSettings {
    /// The bounds the types cannot hold: the URLs' schemes (all TLS or none), the client
    /// certificate with its key, and the namespace's characters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut schemes = Vec::new();
        for url in self.seed_urls() {
            let scheme = redis::parse_redis_url(url).map(|u| u.scheme().to_owned());
            let scheme_ok = scheme
                .as_deref()
                .is_some_and(|s| matches!(s, "redis" | "rediss" | "redis+unix" | "unix"));
            if !scheme_ok {
                return Err(invalid(
                    "redis.url",
                    if self.cluster {
                        "not a comma-separated list of redis:// or rediss:// URLs"
                    } else {
                        "not a redis://, rediss:// or unix:// URL (a list of seeds needs redis.cluster = true)"
                    },
                ));
            }
            schemes.extend(scheme);
        }
        if schemes.iter().any(|s| s == "rediss") && schemes.iter().any(|s| s != "rediss") {
            return Err(invalid(
                "redis.url",
                "mixes rediss:// and plain seeds: a cluster is TLS on every node or on none",
            ));
        }
        if self.client_cert_file.is_empty() != self.client_key_file.is_empty() {
            return Err(invalid(
                if self.client_cert_file.is_empty() {
                    "redis.client_cert_file"
                } else {
                    "redis.client_key_file"
                },
                "redis.client_cert_file and redis.client_key_file are set together or not at all",
            ));
        }
        if !self.tls() {
            for (setting, value) in [
                ("redis.ca_file", &self.ca_file),
                ("redis.client_cert_file", &self.client_cert_file),
            ] {
                if !value.is_empty() {
                    return Err(invalid(
                        setting,
                        "set, but redis.url is not rediss://: the file would not be used",
                    ));
                }
            }
        }
        validate_namespace(&self.namespace)
    }

    /// The URLs are `rediss://`: TLS to every node.
    pub fn tls(&self) -> bool {
        self.seed_urls()
            .iter()
            .any(|u| u.trim_start().starts_with("rediss://"))
    }

    /// The URLs in `url`: one, or in cluster mode each seed.
    pub fn seed_urls(&self) -> Vec<&str> {
        if self.cluster {
            self.url.split(',').map(str::trim).collect()
        } else {
            vec![self.url.as_str()]
        }
    }
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout_ms.get()
    }
    pub fn response_timeout(&self) -> Duration {
        self.response_timeout_ms.get()
    }
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

#[cfg(test)]
mod tests {
    use crate::config::tests::{env, load};

    #[test]
    fn rediss_is_accepted_with_its_files() {
        let ok = load(env(&[
            (
                "LEDGERBOARD__REDIS__URL",
                "rediss://:pw@redis.internal:6380",
            ),
            ("LEDGERBOARD__REDIS__CA_FILE", "/ca.pem"),
            ("LEDGERBOARD__REDIS__CLIENT_CERT_FILE", "/c.pem"),
            ("LEDGERBOARD__REDIS__CLIENT_KEY_FILE", "/k.pem"),
        ]))
        .expect("rediss:// with a CA and a client certificate");
        assert!(ok.redis.tls());
        load(env(&[
            ("LEDGERBOARD__REDIS__CLUSTER", "true"),
            ("LEDGERBOARD__REDIS__URL", "rediss://a:6380,rediss://b:6380"),
        ]))
        .expect("a TLS cluster");
        for (vars, setting) in [
            (
                vec![
                    ("LEDGERBOARD__REDIS__CLUSTER", "true"),
                    ("LEDGERBOARD__REDIS__URL", "rediss://a:6380,redis://b:6379"),
                ],
                "redis.url",
            ),
            (
                vec![("LEDGERBOARD__REDIS__CA_FILE", "/ca.pem")],
                "redis.ca_file",
            ),
        ] {
            let err = load(env(&vars)).expect_err(setting).to_string();
            assert!(err.contains(setting), "{err}");
        }
    }

    #[test]
    fn bad_redis_settings_name_the_setting() {
        assert_eq!(
            crate::config::check_refusals::<crate::config::SharedOnly>(&[
                ("LEDGERBOARD__REDIS__NAMESPACE", "a{b}", "redis.namespace"),
                ("LEDGERBOARD__REDIS__URL", "http://x", "redis.url"),
                (
                    "LEDGERBOARD__REDIS__CLIENT_CERT_FILE",
                    "/c.pem",
                    "redis.client_key_file",
                ),
                (
                    "LEDGERBOARD__REDIS__RESPONSE_TIMEOUT_MS",
                    "5",
                    "redis.response_timeout_ms",
                ),
            ]),
            Ok(())
        );
    }
}
