//! A Redis namespace of the test's own on the shared server (`TestRedis`), and a private
//! `redis-server` (`RedisServer`) for a test that stops, restarts or flushes one.

use std::time::Duration;

use crate::unique_suffix;

pub fn redis_url() -> String {
    std::env::var("LEDGERBOARD_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A Redis namespace that exists for one test; its keys are deleted on drop.
pub struct TestRedis {
    pub namespace: String,
    pub url: String,
}

impl TestRedis {
    pub fn new() -> TestRedis {
        TestRedis {
            namespace: format!("lbtest-{}", unique_suffix()),
            url: redis_url(),
        }
    }

    /// Every key of the namespace, sorted. Panics when Redis cannot be read: an empty list
    /// must mean "no such key", never "could not look".
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self
            .scan()
            .unwrap_or_else(|e| panic!("SCAN {}:* on {}: {e}", self.namespace, self.url));
        keys.sort();
        keys
    }

    /// A connection whose every call is bounded: the namespace may live on a server that hangs
    /// (a test's `BlackHole`), and a clean-up must not hang with it.
    fn connection(&self) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(self.url.as_str())?;
        let conn = client.get_connection_with_timeout(Duration::from_secs(5))?;
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        conn.set_write_timeout(Some(Duration::from_secs(5)))?;
        Ok(conn)
    }

    fn scan(&self) -> redis::RedisResult<Vec<String>> {
        let mut conn = self.connection()?;
        let pattern = format!("{}:*", self.namespace);
        let iter: redis::Iter<String> = redis::cmd("SCAN")
            .cursor_arg(0)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .clone()
            .iter(&mut conn)?;
        // A key the iterator cannot decode is an error too, not a key that is not there.
        iter.collect()
    }

    fn unlink_all(&self) -> redis::RedisResult<()> {
        let keys = self.scan()?;
        if keys.is_empty() {
            return Ok(());
        }
        let mut conn = self.connection()?;
        for chunk in keys.chunks(500) {
            let _: i64 = redis::cmd("UNLINK").arg(chunk).query(&mut conn)?;
        }
        Ok(())
    }
}

impl Default for TestRedis {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        // A namespace on a server of the test's own (a `RedisServer`, a cluster, a
        // `BlackHole`) goes away with that server: only the shared one needs cleaning, and a
        // black hole would only make the clean-up wait out its timeouts.
        if self.url != redis_url() {
            return;
        }
        // Drop must not panic (it may run while a failed test unwinds): say what was left.
        if let Err(e) = self.unlink_all() {
            eprintln!(
                "warning: could not delete the keys of test namespace {}: {e}",
                self.namespace
            );
        }
    }
}

/// A redis-server of the test's own on a free port ([`ledgerboard_harness::RedisServer`]),
/// for tests that stop, restart or starve Redis (never the shared one). Data survives
/// `restart()` after `stop()`, but not the fixture.
pub struct RedisServer(ledgerboard_harness::RedisServer);

impl RedisServer {
    pub fn start() -> RedisServer {
        RedisServer(ledgerboard_harness::RedisServer::start().unwrap_or_else(|e| panic!("{e}")))
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.0.restart().unwrap_or_else(|e| panic!("{e}"));
    }
}

impl std::ops::Deref for RedisServer {
    type Target = ledgerboard_harness::RedisServer;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for RedisServer {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}
