//! The three daemons as processes, scraped at `/metrics` and probed at `/healthz` and
//! `/readyz` while a workload runs: the figures must move as the workload says.

mod metrics;
mod traces;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::KeyLayout;
use ledgerboard_testkit::{
    Process, RedisServer, Scrape, TestDb, TestRedis, daemon_env, http_request,
    http_request_with_headers, migrate, wait_until_blocking, workspace_binary,
};

const API: &str = "ledgerboard-api";
const PROJECTOR: &str = "ledgerboard-projector";
const RECONCILER: &str = "ledgerboard-reconciler";
const DISPATCHER: &str = "ledgerboard-dispatcher";
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
    dispatcher_admin: String,
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
            dispatcher_admin: String::new(),
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
            DISPATCHER => self.dispatcher_admin = addr,
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

/// A span as the collector saw it: service name, span name, trace id and the trace ids of its
/// links (hex).
type SeenSpan = (String, String, String, Vec<String>);

/// A span's name and its attributes' keys, in the order the spans came.
type SeenAttributes = (String, Vec<String>);

/// What the test collector received over OTLP.
#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<SeenSpan>>>,
    attributes: Arc<Mutex<Vec<SeenAttributes>>>,
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
            let mut attributes = self.attributes.lock().expect("lock");
            for rs in request.into_inner().resource_spans {
                let service = service_name(rs.resource.as_ref());
                for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
                    let links = span.links.iter().map(|l| hex(&l.trace_id)).collect();
                    let keys = span.attributes.iter().map(|kv| kv.key.clone()).collect();
                    attributes.push((span.name.clone(), keys));
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

fn tokio_stream_from(
    listener: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    tokio_stream::wrappers::TcpListenerStream::new(listener)
}
