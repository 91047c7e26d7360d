//! A rolling restart of two api processes behind a load balancer, under load: with the drain
//! (`api.drain_delay_ms`), no client sees a refused connection or a failed request.
//!
//! The load balancer is the harness's [`Proxy`], which behaves as a Kubernetes Service does:
//! it sends each new connection to a backend whose `/readyz` answered 200 at its last poll
//! (every 100 ms, as a kubelet's probe), so it learns of a stopping api only through its
//! readiness. Each api in turn gets SIGTERM, is waited for until it exits, and is replaced by a
//! new process, which takes traffic once it is ready; then the other.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use ledgerboard_harness::{Backend, Proxy, http};
use ledgerboard_testkit::{Process, TEST_TOKEN, TestDb, TestRedis, daemon_env, migrate};

const BINARY: &str = env!("CARGO_BIN_EXE_ledgerboard-api");
const POLL: Duration = Duration::from_millis(100);
/// Clients sending requests back to back, each over a fresh connection.
const CLIENTS: usize = 4;

struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failures: Arc<std::sync::Mutex<Vec<String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(addr: std::net::SocketAddr) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(std::sync::Mutex::new(Vec::new()));
        let tasks = (0..CLIENTS)
            .map(|client| {
                let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
                tokio::spawn(async move {
                    let bearer = format!("Bearer {TEST_TOKEN}");
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        // Commands and reads: both must get through the restart.
                        let (method, path, body) = if n.is_multiple_of(2) {
                            let body = format!(
                                r#"{{"event_id":"{}","user_id":"u{client}","delta":1}}"#,
                                uuid::Uuid::new_v4()
                            );
                            ("POST", "/v1/boards/rolling/scores", body)
                        } else {
                            ("GET", "/v1/boards/rolling/top", String::new())
                        };
                        let answer = http::request(
                            addr,
                            method,
                            path,
                            &[("Authorization", &bearer)],
                            body,
                            Duration::from_secs(10),
                        )
                        .await;
                        match answer {
                            Ok((status, _)) if status < 500 => {
                                ok.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok((status, body)) => failures
                                .lock()
                                .expect("failures")
                                .push(format!("{method} {path}: {status} {body}")),
                            Err(e) => failures.lock().expect("failures").push(e.to_string()),
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            ok,
            failures,
            tasks,
        }
    }

    async fn finish(self) -> (u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.expect("client task");
        }
        let failures = self.failures.lock().expect("failures").clone();
        (self.ok.load(Ordering::Relaxed), failures)
    }
}

fn start_api(env: &[(String, String)]) -> (Process, Backend) {
    let env = ledgerboard_testkit::env_refs(env);
    let mut api = Process::start(BINARY, &[], &env);
    let admin = api.wait_for_addr("admin server (healthz", Duration::from_secs(20));
    let serve = api.wait_for_addr("ledgerboard-api started", Duration::from_secs(20));
    (api, Backend { serve, admin })
}

async fn wait_ready(proxy: &Proxy, backend: Backend) {
    ledgerboard_testkit::wait_until(Duration::from_secs(20), || async {
        proxy.is_ready(backend)
    })
    .await
    .expect("the new api became ready behind the proxy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_behind_a_load_balancer_fails_no_request() {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    migrate(&db.url).await;
    let mut env = daemon_env(&db, &redis);
    env.retain(|(k, _)| k != "LEDGERBOARD__API__DRAIN_DELAY_MS");
    env.extend(
        [
            ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
            // Twenty poll periods: the proxy sees the api unready long before it stops accepting,
            // even on a loaded machine.
            ("LEDGERBOARD__API__DRAIN_DELAY_MS", "2000"),
            ("LEDGERBOARD__SHUTDOWN__GRACE_MS", "5000"),
            // Every client comes from 127.0.0.1.
            ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "0"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let proxy = Proxy::start(POLL).await.expect("proxy");
    let mut apis = Vec::new();
    for _ in 0..2 {
        let (api, backend) = start_api(&env);
        proxy.add(backend);
        wait_ready(&proxy, backend).await;
        apis.push((api, backend));
    }
    let load = Load::start(proxy.addr());
    tokio::time::sleep(Duration::from_millis(500)).await;

    for i in 0..2 {
        let (mut old, old_backend) = apis.remove(0);
        let (old, status) = tokio::task::spawn_blocking(move || {
            let status = old.terminate(Duration::from_secs(20));
            (old, status)
        })
        .await
        .expect("terminate");
        assert!(
            status.is_some_and(|s| s.success()),
            "api {i} did not stop cleanly: {status:?} {}",
            old.stderr()
        );
        assert!(old.stderr().contains("draining"), "{}", old.stderr());
        proxy.remove(old_backend);
        let (new, backend) = start_api(&env);
        proxy.add(backend);
        wait_ready(&proxy, backend).await;
        apis.push((new, backend));
        // Load on both before the next one goes.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let (ok, failures) = load.finish().await;
    assert!(
        ok > 100,
        "only {ok} requests answered: the load did not run"
    );
    assert!(
        failures.is_empty(),
        "{} of {} requests failed during the rolling restart; first: {:?}",
        failures.len(),
        ok + failures.len() as u64,
        &failures[..failures.len().min(5)]
    );
    for (mut api, _) in apis {
        tokio::task::spawn_blocking(move || api.terminate(Duration::from_secs(20)))
            .await
            .expect("terminate");
    }
}
