//! The Redis connection pool shared by the daemons: bounded size, connect and response
//! timeouts on every connection, so a stalled Redis turns into an error rather than a hang.

use std::time::Instant;

use deadpool_redis::{Manager, Pool, Runtime};
use opentelemetry::KeyValue;
use redis::aio::ConnectionLike;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, Value};

use crate::config::{RedisSettings, redact_url};
use crate::keys::KeyLayout;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    #[error("redis error: {0}")]
    Redis(redis::RedisError),
    /// The error of a read shared by several requests (the api's coalesced reads).
    #[error(transparent)]
    Shared(std::sync::Arc<CacheError>),
}

impl From<redis::RedisError> for CacheError {
    fn from(err: redis::RedisError) -> Self {
        CacheError::Redis(err)
    }
}

impl From<deadpool_redis::PoolError> for CacheError {
    fn from(err: deadpool_redis::PoolError) -> Self {
        CacheError::Unavailable(err.to_string())
    }
}

/// A Redis pool and the key layout of this deployment's namespace.
#[derive(Clone)]
pub struct Cache {
    pool: Pool,
    keys: KeyLayout,
    url_for_logs: String,
}

impl Cache {
    /// Builds the pool; connections open on first use.
    pub fn connect(settings: &RedisSettings) -> Result<Self, CacheError> {
        let connection = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(settings.connect_timeout()))
            .set_response_timeout(Some(settings.response_timeout()));
        let manager = Manager::new_with_config(settings.url.as_str(), connection)?;
        let pool = Pool::builder(manager)
            .max_size(settings.pool_max_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(settings.connect_timeout()))
            .create_timeout(Some(settings.connect_timeout()))
            .recycle_timeout(Some(settings.response_timeout()))
            .build()
            .map_err(|e| CacheError::Unavailable(e.to_string()))?;
        Ok(Self {
            pool,
            keys: KeyLayout::new(&settings.namespace),
            url_for_logs: redact_url(&settings.url),
        })
    }

    /// A pooled connection whose every command and pipeline is timed into
    /// `ledgerboard_redis_call_duration_seconds`.
    pub async fn connection(&self) -> Result<TimedConnection, CacheError> {
        Ok(TimedConnection(self.pool.get().await?))
    }

    pub fn keys(&self) -> &KeyLayout {
        &self.keys
    }

    pub fn url_for_logs(&self) -> &str {
        &self.url_for_logs
    }

    /// One PING through the pool, within the configured bounds.
    pub async fn ping(&self) -> Result<(), CacheError> {
        let mut conn = self.connection().await?;
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }
}

/// A pooled connection that records the latency of each call it carries.
pub struct TimedConnection(deadpool_redis::Connection);

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

fn record(command: &'static str, started: Instant) {
    crate::telemetry::metrics::metrics()
        .redis_call_duration
        .record(
            started.elapsed().as_secs_f64(),
            &[KeyValue::new("command", command)],
        );
}

/// The commands ledgerboard sends, as a label; anything else is `other`, so the label's
/// values stay a short fixed list.
const KNOWN_COMMANDS: &[&str] = &[
    "CONFIG",
    "DEL",
    "EVAL",
    "EVALSHA",
    "EXISTS",
    "GET",
    "HGET",
    "HLEN",
    "HMGET",
    "HSCAN",
    "HSET",
    "INFO",
    "PEXPIRE",
    "PING",
    "SCAN",
    "SCRIPT",
    "SET",
    "TYPE",
    "UNLINK",
    "ZADD",
    "ZCARD",
    "ZRANGE",
    "ZREVRANGE",
    "ZREVRANK",
    "ZSCAN",
    "ZSCORE",
];

fn command_label(cmd: &Cmd) -> &'static str {
    let Some(redis::Arg::Simple(name)) = cmd.args_iter().next() else {
        return "other";
    };
    KNOWN_COMMANDS
        .iter()
        .find(|known| known.as_bytes().eq_ignore_ascii_case(name))
        .copied()
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_labelled_from_a_fixed_list() {
        assert_eq!(command_label(&redis::cmd("zrevrange")), "ZREVRANGE");
        assert_eq!(command_label(&redis::cmd("EVALSHA")), "EVALSHA");
        assert_eq!(command_label(&redis::cmd("FLUSHALL")), "other");
        assert_eq!(command_label(&Cmd::new()), "other");
    }
}
