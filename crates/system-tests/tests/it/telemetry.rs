//! The three daemons as processes, scraped at `/metrics` and probed at `/healthz` and
//! `/readyz` while a workload runs: the figures must move as the workload says.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ledgerboard_core::domain::BoardId;
use ledgerboard_core::projection::KeyLayout;
use ledgerboard_testkit::{
    Process, RedisServer, Scrape, TestDb, TestRedis, daemon_env, http_request,
    http_request_with_headers, migrate, wait_until_blocking, workspace_binary,
};

const API: &str = "ledgerboard-api";
const PROJECTOR: &str = "ledgerboard-projector";
const RECONCILER: &str = "ledgerboard-reconciler";
const BOARD: &str = "telemetry";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// One test's database, Redis namespace and daemon addresses.
struct Stack {
    _db: TestDb,
    redis_url: String,
    namespace: String,
    env: Vec<(String, String)>,
    api: String,
    /// The api's admin port (`/healthz`, `/readyz`, `/metrics`).
    api_admin: String,
    projector_admin: String,
    reconciler_admin: String,
}

impl Stack {
    async fn new(redis_url: Option<String>, extra: &[(&str, &str)]) -> Stack {
        let db = TestDb::create().await;
        migrate(&db.url).await;
        let shared = TestRedis::new();
        let mut env = daemon_env(&db, &shared);
        let redis_url = redis_url.unwrap_or_else(|| shared.url.clone());
        // Every daemon binds a port of its own choice (`127.0.0.1:0`, set by `daemon_env` for
        // the admin servers) and logs it; `start` reads it. No port is found free and bound
        // again later, so no other test can take it in between.
        env.retain(|(k, _)| k != "LEDGERBOARD__REDIS__URL");
        for (k, v) in [
            ("LEDGERBOARD__REDIS__URL", redis_url.as_str()),
            ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
            ("LEDGERBOARD__PROJECTOR__POLL_INTERVAL_MS", "50"),
            ("LEDGERBOARD__TELEMETRY__OUTBOX_SAMPLE_INTERVAL_MS", "100"),
            // One pass at start-up, and none after it during a test.
            ("LEDGERBOARD__RECONCILER__INTERVAL_MS", "3600000"),
        ]
        .into_iter()
        .chain(extra.iter().copied())
        {
            env.push((k.to_owned(), v.to_owned()));
        }
        Stack {
            namespace: shared.namespace.clone(),
            _db: db,
            redis_url,
            env,
            api: String::new(),
            api_admin: String::new(),
            projector_admin: String::new(),
            reconciler_admin: String::new(),
        }
    }

    /// Starts a daemon, waits until it says it started, and records the address it bound
    /// (a restarted daemon gets another one).
    fn start(&mut self, name: &str) -> Process {
        let env = ledgerboard_harness::env_refs(&self.env);
        let binary = workspace_binary(name);
        let mut process = Process::start(&binary.to_string_lossy(), &[], &env);
        let limit = Duration::from_secs(20);
        let started = format!("{name} started");
        let admin = process
            .wait_for_addr("admin server (healthz", limit)
            .to_string();
        let addr = if name == API {
            process.wait_for_addr(&started, limit).to_string()
        } else {
            admin.clone()
        };
        assert!(
            process.wait_for_log(&started, limit),
            "{name} did not start: {}",
            process.stderr()
        );
        match name {
            API => {
                self.api = addr;
                self.api_admin = admin;
            }
            PROJECTOR => self.projector_admin = addr,
            _ => self.reconciler_admin = addr,
        }
        process
    }

    fn stop(&self, mut process: Process) {
        let status = process.terminate(Duration::from_secs(15));
        assert!(
            status.is_some_and(|s| s.success()),
            "stop: {status:?} {}",
            process.stderr()
        );
    }

    fn post(&self, user: &str, delta: i64) -> u16 {
        let body = format!(
            r#"{{"event_id":"{}","user_id":"{user}","delta":{delta}}}"#,
            uuid::Uuid::new_v4()
        );
        let traceparent = format!("00-{TRACE_ID}-00f067aa0ba902b7-01");
        let bearer = format!("Bearer {}", ledgerboard_testkit::TEST_TOKEN);
        http_request_with_headers(
            &self.api,
            "POST",
            &format!("/v1/boards/{BOARD}/scores"),
            &[
                ("traceparent", traceparent.as_str()),
                ("Authorization", &bearer),
            ],
            &body,
        )
        .0
    }

    fn redis(&self) -> redis::Connection {
        redis::Client::open(self.redis_url.as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .expect("redis connection")
    }
}

/// Scrapes `addr` until `done` holds, for at most 20 s, and returns that scrape; fails with
/// the last one when it never holds.
fn eventually(addr: &str, what: &str, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let mut last = Scrape::default();
    wait_until_blocking(Duration::from_secs(20), || {
        last = Scrape::fetch(addr);
        done(&last)
    })
    .unwrap_or_else(|| panic!("{what}: not reached; last scrape of {addr}:\n{}", last.text));
    last
}

fn get(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    s.value(name, labels)
        .unwrap_or_else(|| panic!("{name} {labels:?} is not exported:\n{}", s.text))
}

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

    // Now that every kind of series has a sample, the dashboard and the alert rules must name
    // only metrics the daemons export.
    let exported: std::collections::BTreeSet<String> = [
        &stack.api_admin,
        &stack.projector_admin,
        &stack.reconciler_admin,
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

    stack.stop(reconciler);
    stack.stop(projector);
    stack.stop(api);
}

/// Every `ledgerboard_*` name in deploy/observability/ (dashboard, alert rules and their
/// tests) is one the daemons export; a histogram may be named by its base name.
fn check_observability_files(exported: &std::collections::BTreeSet<String>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/observability");
    let mut checked = 0;
    for file in ["grafana-dashboard.json", "alerts.yaml", "alerts.test.yaml"] {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let names = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|t| t.starts_with("ledgerboard_"));
        for name in names {
            let known = exported.contains(name)
                || ["_bucket", "_sum", "_count"]
                    .iter()
                    .any(|suffix| exported.contains(&format!("{name}{suffix}")));
            assert!(
                known,
                "{file} names {name}, which no daemon exports; exported: {exported:?}"
            );
            checked += 1;
        }
    }
    assert!(
        checked > 20,
        "only {checked} metric names found in deploy/observability"
    );
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

/// A span as the collector saw it: service name, span name, trace id and the trace ids of its
/// links (hex).
type SeenSpan = (String, String, String, Vec<String>);

/// What the test collector received over OTLP.
#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<SeenSpan>>>,
    /// (service name, metric name)
    metrics: Arc<Mutex<Vec<(String, String)>>>,
}

fn service_name(resource: Option<&opentelemetry_proto::tonic::resource::v1::Resource>) -> String {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    resource
        .into_iter()
        .flat_map(|r| &r.attributes)
        .find(|kv| kv.key == "service.name")
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            Value::StringValue(s) => s.clone(),
            other => format!("{other:?}"),
        })
        .unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

mod collector {
    use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::MetricsService;
    use opentelemetry_proto::tonic::collector::metrics::v1::{
        ExportMetricsServiceRequest, ExportMetricsServiceResponse,
    };
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceService;
    use opentelemetry_proto::tonic::collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    };

    use super::{Received, hex, service_name};

    #[tonic::async_trait]
    impl TraceService for Received {
        async fn export(
            &self,
            request: tonic::Request<ExportTraceServiceRequest>,
        ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
            let mut spans = self.spans.lock().expect("lock");
            for rs in request.into_inner().resource_spans {
                let service = service_name(rs.resource.as_ref());
                for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
                    let links = span.links.iter().map(|l| hex(&l.trace_id)).collect();
                    spans.push((service.clone(), span.name, hex(&span.trace_id), links));
                }
            }
            Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
        }
    }

    #[tonic::async_trait]
    impl MetricsService for Received {
        async fn export(
            &self,
            request: tonic::Request<ExportMetricsServiceRequest>,
        ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
            let mut metrics = self.metrics.lock().expect("lock");
            for rm in request.into_inner().resource_metrics {
                let service = service_name(rm.resource.as_ref());
                for m in rm.scope_metrics.into_iter().flat_map(|s| s.metrics) {
                    metrics.push((service.clone(), m.name));
                }
            }
            Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
        }
    }
}

/// A local OTLP/gRPC collector recording what it receives: `http://`, or with `tls` (a
/// certificate and its key, PEM) `https://`.
async fn start_collector(
    tls: Option<(&str, &str)>,
) -> (
    String,
    Received,
    tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
) {
    use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::MetricsServiceServer;
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceServiceServer;

    let received = Received::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let scheme = if tls.is_some() { "https" } else { "http" };
    let endpoint = format!("{scheme}://{}", listener.local_addr().expect("addr"));
    let mut builder = tonic::transport::Server::builder();
    if let Some((cert, key)) = tls {
        builder = builder
            .tls_config(
                tonic::transport::ServerTlsConfig::new()
                    .identity(tonic::transport::Identity::from_pem(cert, key)),
            )
            .expect("collector TLS");
    }
    let server = tokio::spawn(
        builder
            .add_service(TraceServiceServer::new(received.clone()))
            .add_service(MetricsServiceServer::new(received.clone()))
            .serve_with_incoming(tokio_stream_from(listener)),
    );
    (endpoint, received, server)
}

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

fn tokio_stream_from(
    listener: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    tokio_stream::wrappers::TcpListenerStream::new(listener)
}
