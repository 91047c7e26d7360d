//! The exported counters are the projectors' own counters: what a test reads from
//! `Projector::counters` is what `/metrics` shows. Its own binary, because it installs the
//! process-wide meter provider.

use std::time::Instant;

use ledgerboard_projector::metrics::Tally;
use ledgerboard_projector::metrics::{BatchErrorKind, Counters};
use ledgerboard_testkit::Scrape;

fn scrape(registry: &prometheus::Registry) -> Scrape {
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&registry.gather())
        .expect("encode");
    Scrape::parse(&text)
}

fn get(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    s.value(name, labels)
        .unwrap_or_else(|| panic!("{name} {labels:?} is not exported:\n{}", s.text))
}

#[tokio::test]
async fn the_exported_counters_are_the_sum_of_every_projectors_counters() {
    let telemetry =
        ledgerboard_core::telemetry::init("metrics-test", &Default::default(), &Default::default())
            .expect("telemetry");
    ledgerboard_projector::metrics::init();

    // Every labelled series exists at 0 before anything happened.
    let s = scrape(&telemetry.registry());
    for result in ["applied", "duplicate", "stale", "failed"] {
        assert_eq!(
            get(&s, "ledgerboard_projections_total", &[("result", result)]),
            0.0
        );
    }
    for kind in ["redis_outage", "database", "timeout"] {
        let labels = [("kind", kind)];
        assert_eq!(
            get(&s, "ledgerboard_projection_batch_errors_total", &labels),
            0.0
        );
    }
    assert_eq!(get(&s, "ledgerboard_projection_parked_total", &[]), 0.0);

    // Two projectors in one process: the exported counters are their sum.
    let (a, b) = (Counters::register(), Counters::register());
    let tally = Tally {
        claimed: 9,
        applied: 4,
        duplicate: 2,
        stale: 1,
        failed: 2,
        parked: 1,
        top_changed: 0,
    };
    a.batch(&tally, Instant::now());
    b.batch(&tally, Instant::now());
    b.batch_error(BatchErrorKind::RedisOutage);
    let s = scrape(&telemetry.registry());
    let (sa, sb) = (a.snapshot(), b.snapshot());
    for (result, n) in [
        ("applied", sa.applied + sb.applied),
        ("duplicate", sa.duplicate + sb.duplicate),
        ("stale", sa.stale + sb.stale),
        ("failed", sa.failed + sb.failed),
    ] {
        let exported = get(&s, "ledgerboard_projections_total", &[("result", result)]);
        assert_eq!(exported, n as f64, "{result}");
    }
    assert_eq!((sa.applied, sb.applied), (4, 4));
    assert_eq!(
        get(&s, "ledgerboard_projection_parked_total", &[]),
        (sa.parked + sb.parked) as f64
    );
    let outages = [("kind", "redis_outage")];
    assert_eq!(
        get(&s, "ledgerboard_projection_batch_errors_total", &outages),
        (sa.outages + sb.outages) as f64
    );
    assert_eq!((sa.outages, sb.outages), (0, 1));
    assert_eq!(get(&s, "ledgerboard_projection_batch_rows_count", &[]), 2.0);

    // A projector that stopped keeps its counts in the sum: an exported counter never falls.
    drop(a);
    let s = scrape(&telemetry.registry());
    let applied = get(
        &s,
        "ledgerboard_projections_total",
        &[("result", "applied")],
    );
    assert_eq!(applied, 8.0);
    telemetry.shutdown().await;
}
