//! The Redis connection pool shared by the daemons: bounded size, connect and response
//! timeouts on every connection, so a stalled Redis turns into an error rather than a hang.

use deadpool_redis::{Manager, Pool, Runtime};
use redis::AsyncConnectionConfig;

use crate::config::{RedisSettings, redact_url};
use crate::keys::KeyLayout;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    #[error("redis error: {0}")]
    Redis(redis::RedisError),
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

    pub async fn connection(&self) -> Result<deadpool_redis::Connection, CacheError> {
        Ok(self.pool.get().await?)
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
