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
        }
    }
}

impl RedisSettings {
    /// The bounds the types cannot hold: the URLs' schemes and the namespace's characters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // TLS (rediss://) is not built in: refuse it here rather than at the first connect.
        for url in self.seed_urls() {
            let scheme_ok = redis::parse_redis_url(url)
                .is_some_and(|u| matches!(u.scheme(), "redis" | "redis+unix" | "unix"));
            if !scheme_ok {
                return Err(invalid(
                    "redis.url",
                    if self.cluster {
                        "not a comma-separated list of redis:// URLs"
                    } else {
                        "not a redis:// or unix:// URL (a list of seeds needs redis.cluster = true)"
                    },
                ));
            }
        }
        validate_namespace(&self.namespace)
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
    #[test]
    fn bad_redis_settings_name_the_setting() {
        assert_eq!(
            crate::config::check_refusals::<crate::config::SharedOnly>(&[
                ("LEDGERBOARD__REDIS__NAMESPACE", "a{b}", "redis.namespace"),
                ("LEDGERBOARD__REDIS__URL", "http://x", "redis.url"),
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
