//! The API as the benchmarks run it: in this process on the main runtime, on a real socket,
//! with the daemon's router and server loop, one fresh database and Redis namespace.

use std::net::SocketAddr;
use std::time::Duration;

use crate::settings::Settings;
use anyhow::Context;
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
        settings.auth.player_keys = crate::players::keys_entry()?.into();
        // Every load client comes from one address: the per-address limit would measure itself.
        settings.api.rate_limit_per_s = 0;
        settings.api.player_rate_limit_per_min = 0;
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

    /// Declares `board` with `definition` (the JSON body of `PUT /v1/boards/{board}`) through
    /// the API, as a game's deploy would.
    /// Declares each of `definitions` (board, definition), in order.
    pub async fn declare_all(&self, definitions: &[(&str, &str)]) -> anyhow::Result<()> {
        for (board, definition) in definitions {
            self.declare(board, definition).await?;
        }
        Ok(())
    }

    pub async fn declare(&self, board: &str, definition: &str) -> anyhow::Result<()> {
        self.put(&format!("/v1/boards/{board}"), definition).await
    }

    /// `PUT path` with `body` as the admin token, which must answer 201 (a new declaration).
    pub async fn put(&self, path: &str, body: &str) -> anyhow::Result<()> {
        let mut conn = crate::load::Connection::open(self.addr).await?;
        let answer = conn
            .send(&crate::load::request(
                "PUT",
                path,
                Some(ledgerboard_testkit::TEST_TOKEN),
                Some(body),
            ))
            .await?;
        anyhow::ensure!(
            answer.status == 201,
            "PUT {path}: {}: {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
        Ok(())
    }

    /// Rebuilds `board`'s projection from PostgreSQL with the real `lbctl rebuild`, which
    /// seals it: a board written to Redis by hand has no seal, and bounded reads of it would
    /// measure the database fallback.
    pub fn rebuild(&self, board: &str) -> anyhow::Result<()> {
        let env = crate::settings::daemon_env(&self.settings);
        crate::reconciler::measure(
            &crate::reconciler::binary("lbctl")?,
            &["rebuild", "--board", board],
            &env,
            0,
        )?;
        Ok(())
    }

    /// `request` (a read) is answered 200 from the projection, as the figures that follow
    /// claim: a measurement of the database fallback would be one of something else.
    pub async fn answered_by_projection(&self, what: &str, request: &[u8]) -> anyhow::Result<()> {
        let mut conn = crate::load::Connection::open(self.addr).await?;
        let answer = conn.send(request).await?;
        let body: serde_json::Value = serde_json::from_slice(&answer.body)
            .with_context(|| format!("{what}: {}", answer.status))?;
        anyhow::ensure!(
            answer.status == 200 && body["freshness"]["source"] == "projection",
            "{what} is not answered from the projection: {} {}",
            answer.status,
            body["freshness"]
        );
        Ok(())
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        self.server.await??;
        Ok(())
    }
}
