//! telemetry: metrics.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn metrics_follow_commands_lag_drain_and_a_planted_corruption() {
    let mut stack = Stack::new(None, &[]).await;
    let api = stack.start(API);
    let projector = stack.start(PROJECTOR);

    // Five users get a first score, through the real HTTP path.
    for (i, user) in ["ann", "bob", "cid", "dee", "eve"].iter().enumerate() {
        assert_eq!(stack.post(user, 10 * (i as i64 + 1)), 201);
    }
    let p = eventually(&stack.projector_admin, "5 rows projected", |s| {
        s.value("ledgerboard_projections_total", &[("result", "applied")]) == Some(5.0)
    });
    assert_eq!(
        get(&p, "ledgerboard_projection_batch_rows_sum", &[]),
        5.0,
        "rows per batch add up to the rows claimed"
    );
    assert_eq!(
        get(&p, "ledgerboard_projections_total", &[("result", "failed")]),
        0.0
    );
    assert!(
        get(
            &p,
            "ledgerboard_redis_call_duration_seconds_count",
            &[("command", "pipeline")]
        ) >= 1.0
    );
    // Refused commands are counted too, whichever check refuses them.
    assert_eq!(stack.post("ann", 5_000), 422);
    let (status, body) = http_request(&stack.api, "POST", "/v1/boards/a%20b/scores", "{}");
    assert!((400..500).contains(&status), "{status} {body}");
    let a = Scrape::fetch(&stack.api_admin);
    assert_eq!(
        get(&a, "ledgerboard_commands_total", &[("outcome", "created")]),
        5.0
    );
    assert_eq!(
        get(&a, "ledgerboard_commands_total", &[("outcome", "refused")]),
        2.0
    );
    assert_eq!(
        get(
            &a,
            "ledgerboard_http_request_duration_seconds_count",
            &[
                ("route", "/v1/boards/{board}/scores"),
                ("method", "POST"),
                ("status", "201")
            ]
        ),
        5.0
    );
    assert!(
        get(
            &a,
            "ledgerboard_db_call_duration_seconds_count",
            &[("op", "score_command")]
        ) >= 5.0
    );

    // Projector stopped: three more commands stay pending, and the api's gauges say so.
    stack.stop(projector);
    for user in ["ann", "bob", "cid"] {
        assert_eq!(stack.post(user, 1), 201);
    }
    let a = eventually(&stack.api_admin, "3 rows pending", |s| {
        s.value("ledgerboard_outbox_pending", &[]) == Some(3.0)
            && s.value("ledgerboard_outbox_oldest_pending_age_seconds", &[]) > Some(0.0)
    });
    assert_eq!(get(&a, "ledgerboard_outbox_parked", &[]), 0.0);
    // A strong read is served from PostgreSQL and counted as such.
    let (status, _) = http_request(
        &stack.api,
        "GET",
        &format!("/v1/boards/{BOARD}/top?consistency=strong"),
        "",
    );
    assert_eq!(status, 200);
    let a = Scrape::fetch(&stack.api_admin);
    assert_eq!(
        get(
            &a,
            "ledgerboard_read_fallbacks_total",
            &[("reason", "strong")]
        ),
        1.0
    );

    // Restarted, the projector drains the backlog: pending falls to 0 and age with it.
    let projector = stack.start(PROJECTOR);
    eventually(&stack.projector_admin, "3 rows projected", |s| {
        s.value("ledgerboard_projections_total", &[("result", "applied")]) == Some(3.0)
    });
    eventually(&stack.api_admin, "outbox drained", |s| {
        s.value("ledgerboard_outbox_pending", &[]) == Some(0.0)
            && s.value("ledgerboard_outbox_oldest_pending_age_seconds", &[]) == Some(0.0)
    });

    // Plant drift: one corrupt score, one member deleted from both halves.
    let keys = KeyLayout::new(&stack.namespace);
    let board = BoardId::parse(BOARD).expect("board id");
    let mut conn = stack.redis();
    let _: () = redis::cmd("ZADD")
        .arg(keys.scores(&board))
        .arg(999)
        .arg("dee")
        .query(&mut conn)
        .expect("corrupt");
    let _: () = redis::pipe()
        .cmd("ZREM")
        .arg(keys.scores(&board))
        .arg("eve")
        .cmd("HDEL")
        .arg(keys.versions(&board))
        .arg("eve")
        .query(&mut conn)
        .expect("delete");

    // The reconciler's first pass finds exactly that and repairs it.
    let reconciler = stack.start(RECONCILER);
    let r = eventually(&stack.reconciler_admin, "one pass completed", |s| {
        s.value(
            "ledgerboard_reconcile_passes_total",
            &[("outcome", "completed")],
        ) == Some(1.0)
    });
    assert_eq!(
        get(&r, "ledgerboard_reconcile_rows_checked_total", &[]),
        5.0
    );
    for (class, n) in [
        ("corrupt", 1.0),
        ("missing", 1.0),
        ("stale", 0.0),
        ("ahead", 0.0),
        ("orphan", 0.0),
    ] {
        assert_eq!(
            get(
                &r,
                "ledgerboard_reconcile_last_pass_drift",
                &[("class", class)]
            ),
            n,
            "{class}"
        );
        assert_eq!(
            get(&r, "ledgerboard_reconcile_drift_total", &[("class", class)]),
            n,
            "{class}"
        );
    }
    assert_eq!(
        get(
            &r,
            "ledgerboard_reconcile_repairs_total",
            &[("action", "repaired")]
        ),
        2.0
    );
    assert_eq!(get(&r, "ledgerboard_reconciler_lock_held", &[]), 0.0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let last = get(&r, "ledgerboard_reconcile_last_success_seconds", &[]);
    assert!((now - last).abs() < 60.0, "last success {last}, now {now}");
    let repaired: Option<f64> = redis::cmd("ZSCORE")
        .arg(keys.scores(&board))
        .arg("dee")
        .query(&mut conn)
        .expect("zscore");
    assert_eq!(repaired, Some(40.0));

    // Every daemon is alive and ready, and says what it checked.
    for addr in [
        &stack.api_admin,
        &stack.projector_admin,
        &stack.reconciler_admin,
    ] {
        assert_eq!(http_request(addr, "GET", "/healthz", "").0, 200, "{addr}");
        let (status, body) = http_request(addr, "GET", "/readyz", "");
        assert_eq!(status, 200, "{addr}: {body}");
        let body: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(body["checks"]["postgres"]["ok"], true, "{body}");
        assert_eq!(body["checks"]["redis"]["ok"], true, "{body}");
    }
    let (_, body) = http_request(&stack.reconciler_admin, "GET", "/readyz", "");
    assert!(
        body.contains(r#""reconciler_lock":{"held":false}"#),
        "{body}"
    );

    // The dispatcher too: its gauges (parked deliveries, circuits, gaps) are sampled from the
    // start, so the webhook alerts' series exist before any subscription does.
    let dispatcher = stack.start(DISPATCHER);
    eventually(&stack.dispatcher_admin, "the webhook gauges sampled", |s| {
        s.names().any(|n| n == "ledgerboard_webhook_parked")
    });
    // Now that every kind of series has a sample, the dashboard and the alert rules must name
    // only metrics the daemons export.
    let exported: std::collections::BTreeSet<String> = [
        &stack.api_admin,
        &stack.projector_admin,
        &stack.reconciler_admin,
        &stack.dispatcher_admin,
    ]
    .into_iter()
    .flat_map(|addr| {
        Scrape::fetch(addr)
            .names()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    })
    .collect();
    check_observability_files(&exported);

    stack.stop(dispatcher);
    stack.stop(reconciler);
    stack.stop(projector);
    stack.stop(api);
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_follows_redis_and_the_api_stays_ready_without_it() {
    let mut server = RedisServer::start();
    // Readiness is the age of the last successful heartbeat: a short bound, so that the test
    // sees Redis gone within a second or so.
    let mut stack = Stack::new(
        Some(server.url()),
        &[
            ("LEDGERBOARD__API__READINESS_STALE_MS", "1000"),
            ("LEDGERBOARD__PROJECTOR__READINESS_STALE_MS", "1000"),
        ],
    )
    .await;
    let api = stack.start(API);
    let projector = stack.start(PROJECTOR);
    for addr in [&stack.api_admin, &stack.projector_admin] {
        assert_eq!(http_request(addr, "GET", "/readyz", "").0, 200, "{addr}");
    }

    server.stop();
    // The projector can do nothing without Redis: not ready once its last successful contact
    // is older than the bound, but alive.
    let mut last = String::new();
    wait_until_blocking(Duration::from_secs(20), || {
        let (status, body) = http_request(&stack.projector_admin, "GET", "/readyz", "");
        last = body;
        status == 503
    })
    .unwrap_or_else(|| panic!("the projector stayed ready without Redis: {last}"));
    assert!(last.contains("not ready"), "{last}");
    // The api answers commands and reads from PostgreSQL: still ready, Redis reported down.
    let (status, body) = http_request(&stack.api_admin, "GET", "/readyz", "");
    assert_eq!(status, 200, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(body["checks"]["redis"]["ok"], false, "{body}");
    assert_eq!(body["checks"]["redis"]["required"], false, "{body}");
    assert_eq!(
        http_request(&stack.projector_admin, "GET", "/healthz", "").0,
        200
    );
    // A command meanwhile: the projector counts its failed batches as Redis outages.
    assert_eq!(stack.post("ann", 5), 201);
    eventually(&stack.projector_admin, "an outage counted", |s| {
        s.value(
            "ledgerboard_projection_batch_errors_total",
            &[("kind", "redis_outage")],
        ) >= Some(1.0)
    });

    server.restart();
    wait_until_blocking(Duration::from_secs(20), || {
        http_request(&stack.projector_admin, "GET", "/readyz", "").0 == 200
    })
    .expect("projector not ready again");
    eventually(
        &stack.projector_admin,
        "the row projected after the outage",
        |s| s.value("ledgerboard_projections_total", &[("result", "applied")]) == Some(1.0),
    );
    stack.stop(projector);
    stack.stop(api);
}
