//! Daemons as child processes (`Process`), the environment that points one at a test's
//! database and namespace, ports, and the one HTTP request helper.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use crate::{TEST_TOKEN, TestDb, TestRedis, migrate, test_tokens};

/// A TCP port that accepts connections into its backlog and never answers: a stand-in for a
/// server that hangs (black-holed network, frozen process).
pub struct BlackHole {
    listener: TcpListener,
}

impl BlackHole {
    pub fn start() -> BlackHole {
        BlackHole {
            listener: TcpListener::bind("127.0.0.1:0").expect("bind a black-hole port"),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("black-hole address")
    }
}

/// A local port on which nothing listens (bound, then released), for a client that must be
/// refused.
pub fn closed_port() -> u16 {
    free_port()
}

/// A daemon binary run as a child process ([`ledgerboard_harness::Daemon`]), started or the
/// test fails.
pub struct Process(ledgerboard_harness::Daemon);

impl Process {
    /// Starts `binary` with `env` added to the caller's environment minus every variable whose
    /// name starts with `LEDGERBOARD` (settings and config file of the developer's shell).
    pub fn start(binary: &str, args: &[&str], env: &[(&str, &str)]) -> Process {
        Process(
            ledgerboard_harness::Daemon::start(std::path::Path::new(binary), args, env)
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    /// Starts `binary` and waits up to 20 s until it logs `<binary name> started`
    /// ([`ledgerboard_harness::Daemon::start_ready`]); the test fails, with the daemon's
    /// stderr, when it does not.
    pub fn start_ready(binary: &str, args: &[&str], env: &[(&str, &str)]) -> Process {
        Process(
            ledgerboard_harness::Daemon::start_ready(
                std::path::Path::new(binary),
                args,
                env,
                Duration::from_secs(20),
            )
            .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    /// What the process wrote to stderr so far; panics when it cannot be read (an empty text
    /// would pass every "no panic" check).
    pub fn stderr(&self) -> String {
        self.0.stderr().unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`ledgerboard_harness::Daemon::wait_for_addr`]: the address a daemon given
    /// `127.0.0.1:0` bound, read from its log line containing `message`. No port is found free
    /// and bound again later, so no other process can take it in between. Panics (with the
    /// stderr) when the line does not come or names no address.
    pub fn wait_for_addr(&mut self, message: &str, limit: Duration) -> SocketAddr {
        self.0
            .wait_for_addr(message, limit)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`ledgerboard_harness::Daemon::wait_for_log`], panicking when stderr cannot be read.
    pub fn wait_for_log(&mut self, needle: &str, limit: Duration) -> bool {
        self.0
            .wait_for_log(needle, limit)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

impl std::ops::Deref for Process {
    type Target = ledgerboard_harness::Daemon;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Process {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// [`ledgerboard_harness::free_port`], or the test fails. Free when found, not reserved: for
/// a daemon's listen address give `127.0.0.1:0` and read [`Process::wait_for_addr`] instead.
pub fn free_port() -> u16 {
    ledgerboard_harness::free_port().unwrap_or_else(|e| panic!("find a free port: {e}"))
}

/// The environment that points a daemon at a test's database and Redis namespace.
pub fn daemon_env(db: &TestDb, redis: &TestRedis) -> Vec<(String, String)> {
    vec![
        ("LEDGERBOARD__DATABASE__URL".into(), db.url.clone()),
        ("LEDGERBOARD__REDIS__URL".into(), redis.url.clone()),
        (
            "LEDGERBOARD__REDIS__NAMESPACE".into(),
            redis.namespace.clone(),
        ),
        (
            "LEDGERBOARD__DATABASE__STARTUP_TIMEOUT_MS".into(),
            "5000".into(),
        ),
        ("LEDGERBOARD__SHUTDOWN__GRACE_MS".into(), "2000".into()),
        // No load balancer to drain from, unless a test is about the drain.
        ("LEDGERBOARD__API__DRAIN_DELAY_MS".into(), "0".into()),
        ("LEDGERBOARD__AUTH__TOKENS".into(), test_tokens()),
        // Tests run in parallel: admin servers take any free port unless a test names one.
        (
            "LEDGERBOARD__API__ADMIN_LISTEN".into(),
            "127.0.0.1:0".into(),
        ),
        (
            "LEDGERBOARD__PROJECTOR__ADMIN_LISTEN".into(),
            "127.0.0.1:0".into(),
        ),
        (
            "LEDGERBOARD__RECONCILER__ADMIN_LISTEN".into(),
            "127.0.0.1:0".into(),
        ),
        (
            "LEDGERBOARD__DISPATCHER__ADMIN_LISTEN".into(),
            "127.0.0.1:0".into(),
        ),
    ]
}

/// The path of a daemon binary of this workspace, built next to the test executables
/// (`cargo test --workspace` builds every package's binaries first). For a test that runs
/// daemons of several packages, where `CARGO_BIN_EXE_*` names only its own package's.
pub fn workspace_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/<profile>");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace` (or `cargo test --workspace`) first",
        path.display()
    );
    path
}

/// Checks the start-up contract every daemon keeps: against an unmigrated database it refuses
/// to start and says to run `lbctl migrate`; against a migrated one it logs `<binary> started`
/// and exits 0 soon after SIGTERM.
pub async fn check_daemon_lifecycle(binary: &str, name: &str, extra_env: &[(&str, &str)]) {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    let mut env = daemon_env(&db, &redis);
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let env_refs = ledgerboard_harness::env_refs(&env);

    let mut refused = Process::start(binary, &[], &env_refs);
    let status = refused
        .wait_for_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("{name} kept running against an unmigrated database"));
    assert!(
        !status.success(),
        "{name} must refuse an unmigrated database"
    );
    assert!(
        refused.stderr().contains("lbctl migrate"),
        "{}",
        refused.stderr()
    );

    migrate(&db.url).await;
    let mut daemon = Process::start_ready(binary, &[], &env_refs);
    let status = daemon
        .terminate(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("{name} did not stop on SIGTERM: {}", daemon.stderr()));
    assert!(
        status.success(),
        "{name} exited with {status}: {}",
        daemon.stderr()
    );
    assert!(
        daemon.stderr().contains(&format!("{name} stopped")),
        "{}",
        daemon.stderr()
    );

    let mut bad = Process::start(
        binary,
        &[],
        &[("LEDGERBOARD__DATABASE__POOL_MAX_SIZE", "many")],
    );
    let status = bad
        .wait_for_exit(Duration::from_secs(10))
        .expect("exit on a bad setting");
    assert!(!status.success());
    assert!(
        bad.stderr().contains("database.pool_max_size"),
        "{}",
        bad.stderr()
    );
}

/// One HTTP/1.1 request over a fresh connection, bounded by 10 s, through the harness's one
/// client ([`ledgerboard_harness::http`]); the test fails when there is no answer.
/// It carries [`TEST_TOKEN`] as its bearer token.
pub fn http_request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let bearer = format!("Bearer {TEST_TOKEN}");
    http_request_with_headers(addr, method, path, &[("Authorization", &bearer)], body)
}

/// One request with exactly the given headers (no bearer token unless among them).
pub fn http_request_with_headers(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let socket: std::net::SocketAddr = addr
        .parse()
        .unwrap_or_else(|e| panic!("{addr:?} is not an ip:port address: {e}"));
    ledgerboard_harness::http::request_blocking(
        socket,
        method,
        path,
        headers,
        body.to_owned(),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|e| panic!("{addr}: {e}"))
}
