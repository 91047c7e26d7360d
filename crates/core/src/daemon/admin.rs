//! `/healthz`, `/readyz` and `/metrics` on a small admin port of every daemon
//! (`api.admin_listen`, `projector.admin_listen`, `reconciler.admin_listen`), never on the
//! api's public port.
//!
//! - `/healthz`: the process answers. Nothing else is checked, so a slow dependency never gets
//!   a healthy process restarted.
//! - `/readyz`: answered from state the daemon keeps, without a call to any store and without
//!   waiting for anything: the last successful contact with PostgreSQL and Redis (the
//!   heartbeat of `contact.rs`), within the staleness bound. PostgreSQL is always needed;
//!   Redis is needed by the projector and the reconciler, while the api can still take
//!   commands and answer reads from PostgreSQL without it (it is then reported, not failed).
//!   The reconciler also says whether it holds the lock; a standby is ready too. A daemon that
//!   drains (the api after SIGTERM) answers 503 with `"reason": "draining"`.
//! - `/metrics`: the Prometheus text format of every instrument (the registry that
//!   `telemetry::init` set up).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::contact::Contacts;

/// What `/readyz` reads and `/metrics` renders.
#[derive(Clone)]
pub struct Health {
    registry: prometheus::Registry,
    contacts: Contacts,
    /// Ready while the last success with a store is at most this old.
    stale: Duration,
    redis_required: bool,
    lock_held: Option<Arc<AtomicBool>>,
    /// Fired when the daemon starts to drain: from then on it is not ready.
    draining: Option<CancellationToken>,
}

impl Health {
    pub fn new(registry: prometheus::Registry, contacts: Contacts, stale: Duration) -> Self {
        Self {
            registry,
            contacts,
            stale,
            redis_required: true,
            lock_held: None,
            draining: None,
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

    /// Not ready (`"reason": "draining"`) once `draining` fires.
    pub fn with_drain(mut self, draining: CancellationToken) -> Self {
        self.draining = Some(draining);
        self
    }

    /// The three routes.
    pub fn routes(self) -> Router {
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
    let (pg_ok, pg) = h.contacts.postgres.report(h.stale);
    let (redis_ok, mut redis) = h.contacts.redis.report(h.stale);
    redis["required"] = Value::Bool(h.redis_required);
    let draining = h.draining.as_ref().is_some_and(|d| d.is_cancelled());
    let ready = !draining && pg_ok && (redis_ok || !h.redis_required);
    let mut checks = json!({ "postgres": pg, "redis": redis });
    if let Some(held) = &h.lock_held {
        checks["reconciler_lock"] = json!({ "held": held.load(Ordering::Relaxed) });
    }
    let mut body = json!({
        "status": if ready { "ready" } else { "not ready" },
        "checks": checks,
        "stale_after_ms": h.stale.as_millis() as u64,
    });
    if draining {
        body["reason"] = json!("draining");
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
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
    let app = health.routes();
    let task = tokio::spawn(async move {
        let server = axum::serve(listener, app).with_graceful_shutdown(cancel.cancelled_owned());
        if let Err(e) = server.await {
            tracing::warn!(error = %e, "admin server stopped");
        }
    });
    tracing::info!(addr = %local, "admin server (healthz, readyz, metrics) listening");
    Ok((local, task))
}
