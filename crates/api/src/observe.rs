//! One span and one latency sample per request. The span continues the caller's trace when
//! the request carries a `traceparent` header; the sample is labelled by route template (never
//! the raw path, whose ids would make a series per user), method and status.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use ledgerboard_core::telemetry::trace_context;
use opentelemetry::KeyValue;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::metrics::metrics;

pub async fn observe(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let method = req.method().as_str().to_owned();
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
    );
    // A malformed traceparent gives an empty context: the request starts a new trace.
    let _ = span.set_parent(trace_context::from_headers(req.headers()));
    let started = Instant::now();
    let response = next.run(req).instrument(span.clone()).await;
    let status = response.status().as_u16();
    // Set on the OpenTelemetry span alone, not recorded as a tracing field: the JSON log
    // layer would parse the span's fields back and write them again for it (about 1.1 us per
    // request), and no log line follows the response in this span to show it.
    span.set_attribute("http.response.status_code", i64::from(status));
    metrics().http_request_duration.record(
        started.elapsed().as_secs_f64(),
        &[
            KeyValue::new("route", route),
            KeyValue::new("method", method),
            KeyValue::new("status", i64::from(status)),
        ],
    );
    response
}
