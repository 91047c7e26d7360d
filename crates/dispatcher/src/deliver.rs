//! One delivery: the event's JSON, signed (`Ledgerboard-Signature`, core
//! `webhook/signature.rs`), with its id, kind and trace context in headers, POSTed within the
//! client's bounds, in a span that continues the event's trace, counted by outcome.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hyper::body::Bytes;
use ledgerboard_core::telemetry::metrics::Label;
use ledgerboard_core::telemetry::trace_context;
use ledgerboard_core::webhook::signature::{
    self, EVENT_ID_HEADER, EVENT_KIND_HEADER, SIGNATURE_HEADER,
};
use opentelemetry::trace::TraceContextExt;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::client::{Client, Connection, SendError, Target};
use crate::metrics::{self, Outcome};

/// What one delivery sends.
pub struct Delivery<'a> {
    pub subscription: &'a str,
    pub position: i64,
    pub event_id: uuid::Uuid,
    pub kind: &'a str,
    /// The event's trace context: the delivery's span is its child, and the receiver gets the
    /// delivery's (or, without tracing, the event's own).
    pub traceparent: Option<&'a str>,
    pub body: Bytes,
}

/// The receiver's clock is compared with this one: seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Delivers `d` to `target` (or says why it is not delivered to), signed with `secret`.
pub async fn deliver(
    client: &Client,
    conn: &mut Option<Connection>,
    target: &Result<Target, SendError>,
    secret: &str,
    d: &Delivery<'_>,
) -> Result<(), SendError> {
    let span = tracing::info_span!(
        "webhook delivery",
        subscription = d.subscription,
        position = d.position,
        event_id = %d.event_id,
        kind = d.kind,
        outcome = tracing::field::Empty,
    );
    if let Some(sc) = d.traceparent.and_then(trace_context::parse_traceparent) {
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(sc));
    }
    let started = Instant::now();
    let result = async {
        let target = target.as_ref().map_err(Clone::clone)?;
        let traceparent =
            trace_context::current_traceparent().or_else(|| d.traceparent.map(str::to_owned));
        let signed = signature::header(secret, unix_now(), &d.body);
        let id = d.event_id.to_string();
        let mut headers = vec![
            ("content-type", "application/json"),
            (SIGNATURE_HEADER, signed.as_str()),
            (EVENT_ID_HEADER, id.as_str()),
            (EVENT_KIND_HEADER, d.kind),
        ];
        if let Some(tp) = traceparent.as_deref() {
            headers.push(("traceparent", tp));
        }
        client.post(conn, target, &headers, d.body.clone()).await
    }
    .instrument(span.clone())
    .await;
    let outcome = match &result {
        Ok(_) => Outcome::Delivered,
        Err(e) => e.outcome(),
    };
    span.record("outcome", outcome.as_str());
    metrics::delivery(outcome, started.elapsed());
    result.map(|_| ())
}
