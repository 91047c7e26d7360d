//! What the dispatcher's tests share: a real HTTP(S) receiver on port 0 that checks every
//! signature with core's `verify` and answers as the test scripts it; score commands posted
//! through core's `apply_score_command` (real commands: the events come from their statement);
//! a dispatcher running in the test's process; reads of what PostgreSQL holds.

#![allow(dead_code)] // each test file uses its own part

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use ledgerboard_core::board::{self, apply_score_command, definition};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::{BoardId, Submitted};
use ledgerboard_core::webhook::signature::{self, VerifyError};
use ledgerboard_core::webhook::{self, NewSubscription, UrlRules};
use ledgerboard_dispatcher::Dispatcher;
use ledgerboard_dispatcher::settings::Sections;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The dispatcher's settings in a test environment of its own.
pub type TestEnv = ledgerboard_testkit::TestEnv<Sections>;

/// A test environment whose dispatcher delivers to http at loopback (the receivers are local:
/// `allow_http`, `allow_private_addresses`; `addresses.rs` turns the latter off), retries
/// quickly and never opens a circuit or parks unless the test says so.
pub async fn env(tweak: impl FnOnce(&mut ledgerboard_dispatcher::settings::Settings)) -> TestEnv {
    TestEnv::new(|s| {
        let d = &mut s.dispatcher;
        d.allow_http = true;
        d.allow_private_addresses = true;
        d.admin_listen = "127.0.0.1:0".into();
        d.request_timeout_ms = ledgerboard_core::config::Millis::of(1_000);
        d.connect_timeout_ms = ledgerboard_core::config::Millis::of(1_000);
        d.backoff_first_ms = ledgerboard_core::config::Millis::of(20);
        d.backoff_max_ms = ledgerboard_core::config::Millis::of(200);
        d.max_attempts = 1_000;
        d.circuit_threshold = 1_000_000;
        d.poll_interval_ms = ledgerboard_core::config::Millis::of(50);
        d.batch_size = ledgerboard_core::config::Count::of(20);
        s.events.sequence_interval_ms = ledgerboard_core::config::Millis::of(20);
        tweak(s);
    })
    .await
}

/// What a dispatcher in the test's process runs on: settings and a pool.
pub struct Dispatching {
    pub settings: ledgerboard_dispatcher::settings::Settings,
    pub db: Database,
}

/// Anything a dispatcher can be started on: a test environment, or a private server's
/// settings ([`Dispatching`]).
pub trait Dispatchable {
    fn dispatching(&self) -> Dispatching;
}

impl Dispatchable for TestEnv {
    fn dispatching(&self) -> Dispatching {
        Dispatching {
            settings: self.settings.clone(),
            db: self.database(),
        }
    }
}

impl Dispatchable for Dispatching {
    fn dispatching(&self) -> Dispatching {
        Dispatching {
            settings: self.settings.clone(),
            db: self.db.clone(),
        }
    }
}

/// A dispatcher run in this process until the token is cancelled.
pub fn start_dispatcher(
    on: &impl Dispatchable,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let Dispatching { settings, db } = on.dispatching();
    let cancel = CancellationToken::new();
    let dispatcher = Dispatcher::new(settings, db).expect("the dispatcher's client");
    let task = tokio::spawn(dispatcher.run(cancel.clone()));
    (cancel, task)
}

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Ok,
    Status(u16),
    /// Answers 200 only after this long (past the dispatcher's timeout: a hung receiver).
    Hang(Duration),
    /// Answers 200 after this long (within the dispatcher's timeout: a busy receiver).
    Slow(Duration),
}

/// One request the receiver got, in arrival order.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: Uuid,
    pub position: i64,
    pub board: String,
    pub kind: String,
    /// core `verify` of the signature header with the receiver's secret.
    pub verified: Result<i64, VerifyError>,
    pub answer: Answer,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A delivery the dispatcher saw succeed: signed right, answered 200 at once.
    pub fn delivered(&self) -> bool {
        self.verified.is_ok() && matches!(self.answer, Answer::Ok | Answer::Slow(_))
    }
}

#[derive(Default)]
struct State {
    secret: Mutex<String>,
    /// Answers for the next requests, in order; then `then`.
    script: Mutex<(VecDeque<Answer>, Option<Answer>)>,
    log: Mutex<Vec<Received>>,
    requests: AtomicU64,
}

/// A receiver on 127.0.0.1:0: plain HTTP, or TLS with a certificate of the test's PKI.
pub struct Receiver {
    pub addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        Self::start_with(None).await
    }

    /// `tls`: the certificate chain and key (PEM) it presents.
    pub async fn start_with(tls: Option<(&str, &str)>) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let addr = listener.local_addr().expect("receiver address");
        let state = Arc::new(State::default());
        state.script.lock().expect("script").1 = Some(Answer::Ok);
        let acceptor = tls.map(|(cert, key)| tls_acceptor(cert, key));
        let served = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (state, acceptor) = (served.clone(), acceptor.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(&state, req).await) }
                    });
                    let http = hyper::server::conn::http1::Builder::new();
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(tcp).await {
                                let _ = http.serve_connection(TokioIo::new(tls), service).await;
                            }
                        }
                        None => {
                            let _ = http.serve_connection(TokioIo::new(tcp), service).await;
                        }
                    }
                });
            }
        });
        Receiver { addr, state, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    pub fn set_secret(&self, secret: &str) {
        *self.state.secret.lock().expect("secret") = secret.to_owned();
    }

    /// The next requests get `first` in order, then every one gets `then`.
    pub fn script(&self, first: Vec<Answer>, then: Answer) {
        *self.state.script.lock().expect("script") = (first.into(), Some(then));
    }

    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    pub fn log(&self) -> Vec<Received> {
        self.state.log.lock().expect("log").clone()
    }

    /// The distinct event ids delivered (signed right, answered 200 at once).
    pub fn delivered_ids(&self) -> BTreeSet<Uuid> {
        self.log()
            .iter()
            .filter(|r| r.delivered())
            .map(|r| r.id)
            .collect()
    }
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return status(400),
    };
    let header = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(signature::SIGNATURE_HEADER))
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let secret = state.secret.lock().expect("secret").clone();
    let now = ledgerboard_dispatcher_now();
    let verified = signature::verify(&secret, &header, &body, now, signature::DEFAULT_TOLERANCE);
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let answer = if verified.is_ok() {
        let mut script = state.script.lock().expect("script");
        script.0.pop_front().or(script.1).unwrap_or(Answer::Ok)
    } else {
        Answer::Status(400)
    };
    state.log.lock().expect("log").push(Received {
        id: json["id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_default(),
        position: json["position"].as_i64().unwrap_or(-1),
        board: json["board"].as_str().unwrap_or_default().to_owned(),
        kind: json["kind"].as_str().unwrap_or_default().to_owned(),
        verified,
        answer,
        headers,
        body,
        at: Instant::now(),
    });
    match answer {
        Answer::Ok => status(200),
        Answer::Status(code) => status(code),
        Answer::Hang(d) | Answer::Slow(d) => {
            tokio::time::sleep(d).await;
            status(200)
        }
    }
}

fn ledgerboard_dispatcher_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn status(code: u16) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(b"{}")));
    *r.status_mut() = hyper::StatusCode::from_u16(code).expect("status");
    r
}

fn tls_acceptor(cert: &str, key: &str) -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("certificates");
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(ledgerboard_core::tls::provider())
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server certificate");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// Subscribes `receiver` (its secret set from the answer).
pub async fn subscribe(
    db: &Database,
    receiver: &Receiver,
    path: &str,
    lanes: i32,
    boards: &[&str],
) -> String {
    let new = NewSubscription {
        url: receiver.url(path),
        boards: boards.iter().map(|b| (*b).to_owned()).collect(),
        lanes: Some(lanes),
        ..NewSubscription::default()
    };
    subscribe_as(db, receiver, &new).await
}

/// Subscribes everything at `url` (http allowed) for `receiver`, which checks with the
/// subscription's secret.
pub async fn subscribe_url(db: &Database, receiver: &Receiver, url: String) -> String {
    let new = NewSubscription {
        url,
        ..NewSubscription::default()
    };
    subscribe_as(db, receiver, &new).await
}

async fn subscribe_as(db: &Database, receiver: &Receiver, new: &NewSubscription) -> String {
    let created = webhook::create(db, new, UrlRules::LOCAL)
        .await
        .expect("subscribe");
    receiver.set_secret(&created.secret);
    created.subscription.id
}

/// A W3C traceparent of a new trace.
pub fn new_traceparent() -> String {
    let trace = Uuid::new_v4().simple().to_string();
    let span = &Uuid::new_v4().simple().to_string()[..16];
    format!("00-{trace}-{span}-01")
}

/// Posts one score command (`+delta` for `user` on the undeclared `board`, an `add` board) with
/// a trace context of its own, through core's command path. Retries while PostgreSQL is
/// unavailable (a restart) with the same event id, so it has one effect. Returns its event id.
pub async fn post(db: &Database, board: &str, user: &str, delta: i64) -> Uuid {
    let id = Uuid::new_v4();
    let traceparent = new_traceparent();
    let started = Instant::now();
    loop {
        let attempt = async {
            let def = definition::get(db, &BoardId::parse(board).expect("board")).await?;
            let cmd = board::command(
                &def,
                &id.to_string(),
                user,
                None,
                Some(&Submitted::One(serde_json::Number::from(delta))),
                None,
            )
            .expect("a valid command");
            apply_score_command(db, &cmd, Some(&traceparent)).await
        };
        match attempt.await {
            Ok(_) => return id,
            Err(e) => {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "command never accepted: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The event ids of every recorded score command (what the receivers must all get).
pub async fn written(client: &tokio_postgres::Client) -> BTreeSet<Uuid> {
    client
        .query("SELECT event_id FROM score_events", &[])
        .await
        .expect("score_events")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Per board, the events' first arrivals come in position order: what a receiver that drops
/// the ids it has seen (docs/dispatcher.md) processes is each board's events in order. Repeats
/// may come later: the one that failed, and after a crash or a lost lease the events delivered
/// since the lane's position was last written (at most `RECORD_EVERY` of them, lane.rs).
pub fn assert_in_order_per_board(log: &[Received]) {
    let mut last: BTreeMap<&str, i64> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for r in log.iter().filter(|r| r.verified.is_ok()) {
        if !seen.insert(r.position) {
            continue;
        }
        let prev = last.insert(&r.board, r.position).unwrap_or(0);
        assert!(
            r.position > prev,
            "board {}: the first arrival of position {} came after {prev}'s",
            r.board,
            r.position
        );
    }
}

/// Asserts that every signed request verified.
pub fn assert_all_signed(log: &[Received]) {
    let bad: Vec<_> = log.iter().filter(|r| r.verified.is_err()).collect();
    assert!(bad.is_empty(), "requests whose signature failed: {bad:?}");
}

/// The error of the subscription's first lane's last attempt (empty: none).
pub async fn last_error(db: &Database, sub: &str) -> String {
    webhook::get(db, sub).await.expect("get").lane_status[0]
        .last_error
        .clone()
        .unwrap_or_default()
}
