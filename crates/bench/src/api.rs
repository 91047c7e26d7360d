//! The API as the benchmarks run it: in this process on the main runtime, on a real socket,
//! with the daemon's router and server loop, one fresh database and Redis namespace.

use std::net::SocketAddr;
use std::time::Duration;

use crate::settings::Settings;
use ledgerboard_api::{AppState, router, serve};
use ledgerboard_core::config::Count;
use ledgerboard_core::db::Database;
use ledgerboard_core::projection::Store;
use ledgerboard_testkit::{TestDb, TestRedis, test_tokens};
use tokio_util::sync::CancellationToken;

/// A fresh database and namespace, the settings pointing at them, and the API serving them.
pub struct Stack {
    pub db: TestDb,
    /// Held so that its namespace is deleted with the stack.
    _redis: TestRedis,
    pub settings: Settings,
    pub addr: SocketAddr,
    stop: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Stack {
    /// Pools sized for `clients` concurrent requests; the test token may write.
    pub async fn start(clients: usize) -> anyhow::Result<Self> {
        let (db, redis, mut settings) = crate::settings::fresh().await?;
        settings.database.pool_max_size = Count::new(clients)?;
        settings.redis.pool_max_size = Count::new(clients)?;
        settings.auth.tokens = test_tokens().into();
        // Every load client comes from one address: the per-address limit would measure itself.
        settings.api.rate_limit_per_s = 0;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = router(
            AppState::new(
                Database::connect(&settings.database, "bench-api")?,
                Store::connect(&settings.redis)?,
                &settings,
            ),
            &settings.api,
        );
        let stop = CancellationToken::new();
        let server = tokio::spawn({
            let (api, stop) = (settings.api.clone(), stop.clone());
            async move { serve(listener, app, &api, stop, Duration::from_secs(1)).await }
        });
        Ok(Self {
            db,
            _redis: redis,
            settings,
            addr,
            stop,
            server,
        })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        self.server.await??;
        Ok(())
    }
}
