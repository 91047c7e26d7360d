//! W3C trace context (`traceparent`) in and out of spans: read from an HTTP request, written
//! into the outbox row a command produces, and read back by the projector to link its batch
//! span to the requests that caused it.

use std::collections::HashMap;

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The longest `traceparent` accepted from a client or the outbox (version 00 is 55 bytes;
/// the margin allows a future version with a few more fields).
pub const MAX_TRACEPARENT_LEN: usize = 128;

struct HeaderExtractor<'a>(&'a axum::http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= MAX_TRACEPARENT_LEN)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The trace context a request arrived with (`traceparent` / `tracestate` headers); an empty
/// context when it has none or they do not parse.
pub fn from_headers(headers: &axum::http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

/// The current span's context as a `traceparent` value, when it has a valid one.
pub fn current_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// The span context a stored `traceparent` names; None when it does not parse.
pub fn parse_traceparent(traceparent: &str) -> Option<SpanContext> {
    if traceparent.len() > MAX_TRACEPARENT_LEN {
        return None;
    }
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_parses_and_garbage_does_not() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let sc = parse_traceparent(tp).expect("valid");
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled());
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad:?} parsed");
        }
        assert!(parse_traceparent(&"0".repeat(10_000)).is_none());
    }

    #[test]
    fn headers_give_the_parent_context() {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            "traceparent",
            axum::http::HeaderValue::from_static(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ),
        );
        let cx = from_headers(&headers);
        assert_eq!(
            cx.span().span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(
            !from_headers(&axum::http::HeaderMap::new())
                .span()
                .span_context()
                .is_valid()
        );
    }
}
