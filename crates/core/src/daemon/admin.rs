//! `/healthz`, `/readyz` and `/metrics`: on the api's own port, and on a small admin port of
//! the projector and the reconciler (`*.admin_listen`).
//!
//! - `/healthz`: the process answers. Nothing else is checked, so a slow dependency never gets
//!   a healthy process restarted.
//! - `/readyz`: what this daemon needs answers, each check bounded. PostgreSQL is always
//!   needed; Redis is needed by the projector and the reconciler, while the api can still take
//!   commands and answer reads from PostgreSQL without it (it is then reported, not failed).
//!   The reconciler also says whether it holds the lock; a standby is ready too.
//! - `/metrics`: the Prometheus text format of every instrument (the registry that
//!   `telemetry::init` set up).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::db::{Database, Op};
use crate::projection::Store;

/// Bound on each readiness check: keep a probe's `timeoutSeconds` above it.
const CHECK_TIMEOUT: Duration = Duration::from_millis(1_000);

/// What `/readyz` checks and `/metrics` renders.
#[derive(Clone)]
pub struct Health {
    registry: prometheus::Registry,
    db: Database,
    store: Store,
    redis_required: bool,
    lock_held: Option<Arc<AtomicBool>>,
}

impl Health {
    pub fn new(registry: prometheus::Registry, db: Database, store: Store) -> Self {
        Self {
            registry,
            db,
            store,
            redis_required: true,
            lock_held: None,
        }
    }

    /// Redis down does not make this daemon unready (the api: reads fall back, commands do
    /// not touch Redis).
    pub fn redis_optional(mut self) -> Self {
        self.redis_required = false;
        self
    }

    /// Reports the single-reconciler lock (informational: a standby is ready).
    pub fn with_lock(mut self, held: Arc<AtomicBool>) -> Self {
        self.lock_held = Some(held);
        self
    }

    /// The three routes, for any router state (the api merges them into its own router).
    pub fn routes<S: Clone + Send + Sync + 'static>(self) -> Router<S> {
        Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics))
            .with_state(self)
    }
}

async fn healthz() -> Response {
    (StatusCode::OK, axum::Json(json!({ "status": "alive" }))).into_response()
}

async fn readyz(State(h): State<Health>) -> Response {
    let (pg, redis) = tokio::join!(
        check(async {
            let client = h.db.client().await.map_err(|e| e.to_string())?;
            h.db.bounded(Op::Ready, client, async |c| {
                c.simple_query("SELECT 1").await
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
        }),
        check(async { h.store.ping().await.map_err(|e| e.to_string()) }),
    );
    let pg_ok = pg["ok"] == Value::Bool(true);
    let redis_ok = redis["ok"] == Value::Bool(true);
    let ready = pg_ok && (redis_ok || !h.redis_required);
    let mut checks = json!({
        "postgres": pg,
        "redis": with_required(redis, h.redis_required),
    });
    if let Some(held) = &h.lock_held {
        checks["reconciler_lock"] = json!({ "held": held.load(Ordering::Relaxed) });
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({ "status": if ready { "ready" } else { "not ready" }, "checks": checks });
    (status, axum::Json(body)).into_response()
}

fn with_required(mut check: Value, required: bool) -> Value {
    check["required"] = Value::Bool(required);
    check
}

/// Runs one check within [`CHECK_TIMEOUT`]; its outcome and latency as JSON.
async fn check(call: impl Future<Output = Result<(), String>>) -> Value {
    let started = Instant::now();
    let outcome = match tokio::time::timeout(CHECK_TIMEOUT, call).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("no answer within {CHECK_TIMEOUT:?}")),
    };
    let ms = started.elapsed().as_secs_f64() * 1e3;
    match outcome {
        Ok(()) => json!({ "ok": true, "latency_ms": ms }),
        Err(error) => json!({ "ok": false, "latency_ms": ms, "error": error }),
    }
}

async fn metrics(State(h): State<Health>) -> Response {
    let encoder = prometheus::TextEncoder::new();
    match encoder.encode_to_string(&h.registry.gather()) {
        Ok(text) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Binds `addr` and serves the admin routes until `cancel` fires. Returns the bound address
/// (the port may have been 0) and the server task.
pub async fn serve(
    addr: SocketAddr,
    health: Health,
    cancel: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let app: Router = health.routes();
    let task = tokio::spawn(async move {
        let server = axum::serve(listener, app).with_graceful_shutdown(cancel.cancelled_owned());
        if let Err(e) = server.await {
            tracing::warn!(error = %e, "admin server stopped");
        }
    });
    tracing::info!(addr = %local, "admin server (healthz, readyz, metrics) listening");
    Ok((local, task))
}
