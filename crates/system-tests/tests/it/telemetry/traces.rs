//! telemetry: traces.

use super::*;

/// The api exports to an `https` collector whose certificate chains to
/// `telemetry.otlp_ca_file` (a CA made by the test, unknown to the system's roots).
#[tokio::test(flavor = "multi_thread")]
async fn spans_reach_an_https_collector_trusted_through_the_ca_file() {
    let pki = ledgerboard_testkit::tls::TestPki::generate();
    let (endpoint, received, server) =
        start_collector(Some((&pki.server.cert, &pki.server.key))).await;
    let ca = pki.ca_file.display().to_string();
    let mut stack = Stack::new(
        None,
        &[
            ("LEDGERBOARD__TELEMETRY__OTLP_ENDPOINT", endpoint.as_str()),
            ("LEDGERBOARD__TELEMETRY__OTLP_CA_FILE", ca.as_str()),
        ],
    )
    .await;
    let api = stack.start(API);
    assert_eq!(stack.post("tls", 3), 201);
    // Stopping flushes what the batch exporter still holds.
    stack.stop(api);
    let spans = received.spans.lock().expect("lock").clone();
    assert!(
        spans
            .iter()
            .any(|(service, name, _, _)| service == API && name.starts_with("POST /v1/boards/")),
        "no request span reached the https collector: {spans:?}"
    );
    server.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commands_trace_reaches_its_projection_over_otlp() {
    let (endpoint, received, server) = start_collector(None).await;

    let mut stack = Stack::new(
        None,
        &[
            ("LEDGERBOARD__TELEMETRY__OTLP_ENDPOINT", endpoint.as_str()),
            ("LEDGERBOARD__TELEMETRY__METRICS_EXPORT_INTERVAL_MS", "200"),
        ],
    )
    .await;
    let api = stack.start(API);
    let projector = stack.start(PROJECTOR);
    assert_eq!(stack.post("ann", 7), 201);
    eventually(&stack.projector_admin, "the row projected", |s| {
        s.value("ledgerboard_projections_total", &[("result", "applied")]) == Some(1.0)
    });
    // Stopping flushes what the batch exporters still hold.
    stack.stop(projector);
    stack.stop(api);

    let spans = received.spans.lock().expect("lock").clone();
    let request = spans
        .iter()
        .find(|(service, name, _, _)| service == API && name.starts_with("POST /v1/boards/"))
        .unwrap_or_else(|| panic!("no request span from the api: {spans:?}"));
    assert_eq!(
        request.2, TRACE_ID,
        "the request continues the caller's trace"
    );
    // The request span carries the attributes observe.rs gives it and its target, none of
    // the layer's other extras (busy and idle times, thread, source location:
    // telemetry/mod.rs turns them off, as each costs every span CPU).
    let attributes = received.attributes.lock().expect("lock").clone();
    let (_, keys) = attributes
        .iter()
        .find(|(name, _)| name == &request.1)
        .unwrap_or_else(|| panic!("no attributes recorded for {}", request.1));
    let mut keys = keys.clone();
    keys.sort();
    assert_eq!(
        keys,
        [
            "http.request.method",
            "http.response.status_code",
            "http.route",
            "target"
        ],
        "the request span's attributes"
    );
    let batch = spans
        .iter()
        .find(|(service, name, _, _)| service == PROJECTOR && name == "project batch")
        .unwrap_or_else(|| panic!("no batch span from the projector: {spans:?}"));
    assert_eq!(
        batch.3,
        vec![TRACE_ID.to_owned()],
        "the batch span links to the command's trace"
    );
    let metrics = received.metrics.lock().expect("lock").clone();
    for (service, name) in [
        (API, "ledgerboard.commands"),
        (API, "ledgerboard.http.request.duration"),
        (PROJECTOR, "ledgerboard.projections"),
    ] {
        assert!(
            metrics.iter().any(|(s, n)| s == service && n == name),
            "{service} did not export {name}: {metrics:?}"
        );
    }
    server.abort();
}
