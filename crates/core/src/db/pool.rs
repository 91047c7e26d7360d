use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::Row;
use tokio_util::sync::CancellationToken;

use super::bounds::Bounds;
use super::errors::StoreError;
use super::metrics::Op;
use super::statement::{Params, Statement, Statements};
use super::tls::connect_params;
use super::wakeup::Wakeup;
use crate::backoff::Backoff;
use crate::config::{DatabaseSettings, redact_url};

/// A bounded connection pool and the time bounds every call through it obeys.
#[derive(Clone)]
pub struct Database {
    pool: Pool,
    bounds: Bounds,
    url_for_logs: Arc<str>,
    wakeup: Arc<Wakeup>,
    statements: Statements,
}

impl Database {
    /// Builds the pool; no connection is opened until one is needed.
    ///
    /// Every session starts with `statement_timeout` and `idle_in_transaction_session_timeout`,
    /// so a stalled client can never hold locks for long, and TCP keepalives, so a dead peer is
    /// noticed.
    pub fn connect(
        settings: &DatabaseSettings,
        application_name: &str,
    ) -> Result<Self, StoreError> {
        let params = connect_params(settings, &settings.url)?;
        let mut pg = params.config;
        let statement_ms = settings.statement_timeout_ms.ms();
        pg.connect_timeout(settings.connect_timeout())
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .application_name(application_name);
        // A transaction pooler refuses start-up `options` (and could not keep them per client
        // anyway): there the role carries the timeouts, and the client-side bound still holds.
        if !settings.transaction_pooler {
            pg.options(format!(
                "-c statement_timeout={statement_ms} -c idle_in_transaction_session_timeout={}",
                statement_ms.saturating_mul(2)
            ));
        }
        let manager = Manager::from_config(
            pg,
            params.tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(settings.pool_max_size.get())
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(settings.pool_wait_timeout()))
            .create_timeout(Some(settings.connect_timeout()))
            .recycle_timeout(Some(settings.connect_timeout()))
            .build()
            .map_err(|e| StoreError::Internal(e.to_string()))?;
        let statements = Statements::for_pooler(settings.transaction_pooler);
        let bounds = Bounds {
            round_trip_timeout: settings.round_trip_timeout(),
            tls: params.tls,
        };
        Ok(Self {
            wakeup: Arc::new(Wakeup::new(pool.clone(), statements, bounds.clone())),
            pool,
            bounds,
            url_for_logs: redact_url(&settings.url).into(),
            statements,
        })
    }

    /// A pooled connection, within the pool-wait and connect bounds.
    pub async fn client(&self) -> Result<Object, StoreError> {
        Ok(self.pool.get().await?)
    }

    /// Runs `s` on a pooled connection within the round-trip bound, timed under its op.
    pub async fn query<const N: usize>(
        &self,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Vec<Row>, StoreError> {
        let stmts = self.statements;
        self.pooled(s.op(), async |c| stmts.query_untimed(c, s, params).await)
            .await
    }

    /// As [`Self::query`], for exactly one row.
    pub async fn query_one<const N: usize>(
        &self,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Row, StoreError> {
        let stmts = self.statements;
        self.pooled(s.op(), async |c| {
            stmts.query_one_untimed(c, s, params).await
        })
        .await
    }

    /// As [`Self::query`], for at most one row.
    pub async fn query_opt<const N: usize>(
        &self,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Option<Row>, StoreError> {
        let stmts = self.statements;
        self.pooled(s.op(), async |c| {
            stmts.query_opt_untimed(c, s, params).await
        })
        .await
    }

    /// As [`Self::query`], for the number of rows changed.
    pub async fn execute<const N: usize>(
        &self,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<u64, StoreError> {
        let stmts = self.statements;
        self.pooled(s.op(), async |c| stmts.execute_untimed(c, s, params).await)
            .await
    }

    /// A pooled connection, then one bounded round trip on it; the connection goes back to
    /// the pool.
    async fn pooled<T, F>(&self, op: Op, call: F) -> Result<T, StoreError>
    where
        F: AsyncFnOnce(&Object) -> Result<T, tokio_postgres::Error>,
    {
        let client = self.client().await?;
        let (_, value) = self.bounded(op, client, call).await?;
        Ok(value)
    }

    /// Runs one round trip on `client` within the client-side bound, and records its latency
    /// under `op`. On expiry the connection is taken out of the pool: its state (a query in
    /// flight) is unknown. For a call that is not one statement (a ping, a pipelined pair);
    /// one statement goes through [`Self::query`] and its siblings.
    pub async fn bounded<T, F>(
        &self,
        op: Op,
        client: Object,
        call: F,
    ) -> Result<(Object, T), StoreError>
    where
        F: AsyncFnOnce(&Object) -> Result<T, tokio_postgres::Error>,
    {
        self.bounds.run(op, client, call).await
    }

    pub fn statements(&self) -> Statements {
        self.statements
    }

    /// Wakes idle projectors soon (a coalesced NOTIFY on a pooled connection); returns at
    /// once. Called after a commit that wrote outbox rows.
    pub fn wake_projectors(&self) {
        self.wakeup.poke();
    }

    /// The URL with its password hidden, for log lines.
    pub fn url_for_logs(&self) -> &str {
        &self.url_for_logs
    }

    pub fn status(&self) -> deadpool_postgres::Status {
        self.pool.status()
    }

    pub fn close(&self) {
        self.pool.close();
    }
}

/// Waits until PostgreSQL answers `SELECT 1`, retrying with capped backoff, for at most
/// `deadline`. A daemon started before its database (a common order on Kubernetes) waits
/// instead of crash-looping. Returns early with `Ok(false)` when `cancel` fires.
pub async fn wait_until_reachable(
    db: &Database,
    deadline: Duration,
    cancel: &CancellationToken,
) -> Result<bool, StoreError> {
    let started = tokio::time::Instant::now();
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
    loop {
        let attempt = async {
            let client = db.client().await?;
            db.bounded(Op::Ping, client, async |c| c.simple_query("SELECT 1").await)
                .await
                .map(|_| ())
        };
        let outcome = tokio::select! {
            _ = cancel.cancelled() => return Ok(false),
            outcome = attempt => outcome,
        };
        match outcome {
            Ok(()) => return Ok(true),
            Err(e) if started.elapsed() + backoff.current() < deadline => {
                tracing::warn!(url = db.url_for_logs(), error = %e, retry_in = ?backoff.current(), "waiting for PostgreSQL");
            }
            Err(e) => return Err(e),
        }
        if !backoff.wait(cancel).await {
            return Ok(false);
        }
    }
}
