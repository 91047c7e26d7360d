//! Test fixtures on the real servers: a database of the test's own (created, dropped when the
//! fixture drops) and a Redis namespace of its own (its keys deleted when it drops). Tests run
//! in parallel and share the machine's PostgreSQL and Redis with CI and other tests, so nothing
//! here ever flushes a whole Redis or touches another test's database.
//!
//! The servers are found at `LEDGERBOARD_TEST_DATABASE_URL` (an admin connection, default
//! `postgres://postgres@127.0.0.1:5432/postgres`) and `LEDGERBOARD_TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`).

mod env;
mod pgbouncer;
mod scrape;
pub mod stack;
pub mod tls;

pub use env::TestEnv;
pub use ledgerboard_harness::{PostgresServer, env_refs};
pub use pgbouncer::PgBouncer;
pub use scrape::Scrape;

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use tokio_postgres::NoTls;

pub fn admin_database_url() -> String {
    std::env::var("LEDGERBOARD_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

pub fn redis_url() -> String {
    std::env::var("LEDGERBOARD_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

fn unique_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// The bearer token every test daemon and router accepts (scope `admin`).
pub const TEST_TOKEN: &str = "ledgerboard-test-token";

/// `auth.tokens` for tests: [`TEST_TOKEN`] with the `admin` scope.
pub fn test_tokens() -> String {
    format!(
        "tests={}@admin",
        ledgerboard_core::auth::hash_token(TEST_TOKEN)
    )
}

/// The default settings pointed at `database_url` and at the test's own Redis namespace, with
/// [`test_tokens`] and `extra` (environment names, e.g. `LEDGERBOARD__SHUTDOWN__GRACE_MS`), set
/// by name as the environment would, so each applies where `D` has its section: for a router
/// or daemon built in process. Left at the defaults, a test would share Redis namespace
/// `ledgerboard` (the one `just up` uses) with every other such test.
pub fn settings_for<D: ledgerboard_core::config::DaemonSection>(
    database_url: &str,
    redis: &TestRedis,
    extra: &[(&str, &str)],
) -> ledgerboard_core::config::Settings<D> {
    let mut values = ledgerboard_core::config::env_map(extra);
    // `extra` may set its own tokens.
    values
        .entry("LEDGERBOARD__AUTH__TOKENS".to_owned())
        .or_insert_with(test_tokens);
    let mut settings = ledgerboard_core::config::read_from::<D>(None, Some(values))
        .expect("the test values load")
        .settings;
    settings.database.url = database_url.into();
    settings.redis.url = redis.url.as_str().into();
    settings.redis.namespace = redis.namespace.clone();
    settings
}

/// A database that exists for one test.
pub struct TestDb {
    pub name: String,
    /// URL of the test's database (same server and user as the admin URL).
    pub url: String,
    admin_url: String,
}

impl TestDb {
    /// Creates an empty database named `lbtest_<random>`.
    pub async fn create() -> TestDb {
        let admin_url = admin_database_url();
        let name = format!("lbtest_{}", unique_suffix());
        let client = admin_client(&admin_url).await;
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        let url = url_with_dbname(&admin_url, &name);
        TestDb {
            name,
            url,
            admin_url,
        }
    }

    /// A plain client on the test's database, for assertions and set-up.
    pub async fn client(&self) -> tokio_postgres::Client {
        admin_client(&self.url).await
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Drop cannot await, and may run inside a runtime: drop the database from a thread with
        // a runtime of its own.
        let name = self.name.clone();
        let admin_url = self.admin_url.clone();
        let dropper = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime for dropping the test database");
            runtime.block_on(async move {
                let client = admin_client(&admin_url).await;
                if let Err(e) = client
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await
                {
                    eprintln!("warning: could not drop test database {name}: {e}");
                }
            });
        });
        let _ = dropper.join();
    }
}

async fn admin_client(url: &str) -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = url.parse().expect("test database URL parses");
    config.connect_timeout(Duration::from_secs(5));
    let (client, connection) = config
        .connect(NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to the test PostgreSQL: {e}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

fn url_with_dbname(url: &str, dbname: &str) -> String {
    // postgres://user@host:port/db?params → replace the path.
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let authority_end = base[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(base.len());
    let mut out = format!("{}/{}", &base[..authority_end], dbname);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// A Redis namespace that exists for one test; its keys are deleted on drop.
pub struct TestRedis {
    pub namespace: String,
    pub url: String,
}

impl TestRedis {
    pub fn new() -> TestRedis {
        TestRedis {
            namespace: format!("lbtest-{}", unique_suffix()),
            url: redis_url(),
        }
    }

    /// Every key of the namespace, sorted. Panics when Redis cannot be read: an empty list
    /// must mean "no such key", never "could not look".
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self
            .scan()
            .unwrap_or_else(|e| panic!("SCAN {}:* on {}: {e}", self.namespace, self.url));
        keys.sort();
        keys
    }

    /// A connection whose every call is bounded: the namespace may live on a server that hangs
    /// (a test's `BlackHole`), and a clean-up must not hang with it.
    fn connection(&self) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(self.url.as_str())?;
        let conn = client.get_connection_with_timeout(Duration::from_secs(5))?;
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        conn.set_write_timeout(Some(Duration::from_secs(5)))?;
        Ok(conn)
    }

    fn scan(&self) -> redis::RedisResult<Vec<String>> {
        let mut conn = self.connection()?;
        let pattern = format!("{}:*", self.namespace);
        let iter: redis::Iter<String> = redis::cmd("SCAN")
            .cursor_arg(0)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .clone()
            .iter(&mut conn)?;
        // A key the iterator cannot decode is an error too, not a key that is not there.
        iter.collect()
    }

    fn unlink_all(&self) -> redis::RedisResult<()> {
        let keys = self.scan()?;
        if keys.is_empty() {
            return Ok(());
        }
        let mut conn = self.connection()?;
        for chunk in keys.chunks(500) {
            let _: i64 = redis::cmd("UNLINK").arg(chunk).query(&mut conn)?;
        }
        Ok(())
    }
}

impl Default for TestRedis {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        // A namespace on a server of the test's own (a `RedisServer`, a cluster, a
        // `BlackHole`) goes away with that server: only the shared one needs cleaning, and a
        // black hole would only make the clean-up wait out its timeouts.
        if self.url != redis_url() {
            return;
        }
        // Drop must not panic (it may run while a failed test unwinds): say what was left.
        if let Err(e) = self.unlink_all() {
            eprintln!(
                "warning: could not delete the keys of test namespace {}: {e}",
                self.namespace
            );
        }
    }
}

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

pub use ledgerboard_harness::wait::{wait_until, wait_until_blocking};

/// Applies the schema to the database at `url`.
pub async fn migrate(url: &str) {
    let settings = ledgerboard_core::config::DatabaseSettings {
        url: url.into(),
        ..Default::default()
    };
    ledgerboard_core::db::migrate(&settings)
        .await
        .expect("migrate the test database");
}

/// The migrations this build embeds, as `lbctl migrate` applies them.
/// Sends `SELECT pg_sleep(60)` through `db.bounded` and gives up on it after `after`, as a
/// caller that timed out does; returns the backend pid the query ran on. (The session's
/// `statement_timeout` must be well over the wait of [`query_stopped`], or it, not the cancel,
/// ends the query.)
pub async fn abandon_a_query(db: &ledgerboard_core::db::Database, after: Duration) -> i32 {
    let client = db.client().await.expect("a pooled connection");
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    let abandoned = tokio::time::timeout(
        after,
        db.bounded(ledgerboard_core::db::Op::Ping, client, async |c| {
            c.simple_query("SELECT pg_sleep(60)").await
        }),
    )
    .await;
    assert!(abandoned.is_err(), "the sleep cannot have finished");
    pid
}

/// Whether backend `pid` stops running a query within 10 s, seen from `watch`.
pub async fn query_stopped(watch: &tokio_postgres::Client, pid: i32) -> bool {
    wait_until(Duration::from_secs(10), || async {
        watch
            .query_opt(
                "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'",
                &[&pid],
            )
            .await
            .expect("pg_stat_activity")
            .is_none()
    })
    .await
    .is_some()
}

mod embedded {
    refinery::embed_migrations!("../../migrations");
}

/// Applies `next` as the migrations of releases after this build's (the first is numbered N+1,
/// N being [`ledgerboard_core::db::known_schema_version`], the next N+2, …), on a database that
/// `lbctl migrate` of this build migrated: as the next release's `lbctl migrate` would, through
/// refinery's runner over this build's migrations and these, so they are checked and recorded
/// in refinery's history table exactly as refinery records its own. Those already applied are
/// skipped (call it again with one more to go one further). Returns the newest version.
pub async fn apply_next_migrations(db: &TestDb, next: &[(&str, &str)]) -> i32 {
    let known = ledgerboard_core::db::known_schema_version();
    let mut all: Vec<refinery::Migration> = embedded::migrations::runner().get_migrations().clone();
    let mut version = known;
    for (name, sql) in next {
        version += 1;
        all.push(
            refinery::Migration::unapplied(&format!("V{version}__{name}"), sql)
                .unwrap_or_else(|e| panic!("migration {name}: {e}")),
        );
    }
    let mut client = db.client().await;
    refinery::Runner::new(&all)
        .set_abort_divergent(true)
        .set_abort_missing(true)
        .run_async(&mut client)
        .await
        .unwrap_or_else(|e| panic!("applying the next releases' migrations: {e}"));
    version
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

/// A redis-server of the test's own on a free port ([`ledgerboard_harness::RedisServer`]),
/// for tests that stop, restart or starve Redis (never the shared one). Data survives
/// `restart()` after `stop()`, but not the fixture.
pub struct RedisServer(ledgerboard_harness::RedisServer);

impl RedisServer {
    pub fn start() -> RedisServer {
        RedisServer(ledgerboard_harness::RedisServer::start().unwrap_or_else(|e| panic!("{e}")))
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.0.restart().unwrap_or_else(|e| panic!("{e}"));
    }
}

impl std::ops::Deref for RedisServer {
    type Target = ledgerboard_harness::RedisServer;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for RedisServer {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// Seeds `rows` outbox rows for `users` users of `board`: user i gets versions 1, 2, … in id
/// order, each with its own absolute score; `user_scores` holds each user's last one, so a
/// drained projection must equal `user_scores` exactly.
pub async fn seed_outbox(client: &tokio_postgres::Client, board: &str, users: i64, rows: i64) {
    client
        .execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
             SELECT gen_random_uuid(), $1, 'u' || lpad((g % $2::bigint)::text, 6, '0'), 1,
                    g * 7 - 1000, g / $2::bigint + 1
             FROM generate_series(0::bigint, $3::bigint - 1) AS g",
            &[&board, &users, &rows],
        )
        .await
        .expect("seed events");
    client
        .execute(
            "INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version)
             SELECT event_id, board_id, user_id, score, version FROM score_events
             WHERE board_id = $1 ORDER BY version, user_id",
            &[&board],
        )
        .await
        .expect("seed outbox");
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT DISTINCT ON (user_id) board_id, user_id, score, version FROM score_events
             WHERE board_id = $1 ORDER BY user_id, version DESC",
            &[&board],
        )
        .await
        .expect("seed scores");
}

/// Every board's members in PostgreSQL: board → user → (score, version).
pub async fn source_boards(
    client: &tokio_postgres::Client,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, (i64, i64)>> {
    let mut boards: std::collections::BTreeMap<String, std::collections::BTreeMap<_, _>> =
        std::collections::BTreeMap::new();
    for row in client
        .query(
            "SELECT board_id, user_id, score, version FROM user_scores",
            &[],
        )
        .await
        .expect("read user_scores")
    {
        boards
            .entry(row.get(0))
            .or_default()
            .insert(row.get(1), (row.get(2), row.get(3)));
    }
    boards
}

/// Seeds `rows` outbox rows over many boards with skewed traffic, in one arrival order: every
/// `cold_every`-th row is the only row of a cold board of its own (`cold-00000`, `cold-00001`, …), the
/// others go to `hot` hot boards (`hot-0`, …) of up to `hot_users` users each, whose versions
/// grow with the row. `user_scores` holds each member's last row, so a drained projection must
/// equal it exactly.
pub async fn seed_skewed_boards(
    client: &tokio_postgres::Client,
    rows: i64,
    cold_every: i64,
    hot: i64,
    hot_users: i64,
) {
    client
        .batch_execute(&format!(
            "CREATE TEMP TABLE seed AS
             SELECT g, gen_random_uuid() AS event_id,
                    CASE WHEN g % {cold_every} = 0 THEN 'cold-' || lpad((g / {cold_every})::text, 5, '0')
                         ELSE 'hot-' || (g % {hot}) END AS board_id,
                    CASE WHEN g % {cold_every} = 0 THEN 'u1'
                         ELSE 'u' || (g / {hot} % {hot_users}) END AS user_id,
                    g * 7 - 1000 AS score,
                    CASE WHEN g % {cold_every} = 0 THEN 1 ELSE g / ({hot} * {hot_users}) + 1 END AS version
             FROM generate_series(0::bigint, {rows} - 1) AS g;
             INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
                 SELECT event_id, board_id, user_id, 1, score, version FROM seed;
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version)
                 SELECT event_id, board_id, user_id, score, version FROM seed ORDER BY g;
             INSERT INTO user_scores (board_id, user_id, score, version)
                 SELECT DISTINCT ON (board_id, user_id) board_id, user_id, score, version
                 FROM seed ORDER BY board_id, user_id, version DESC;
             DROP TABLE seed;
             ANALYZE leaderboard_outbox;"
        ))
        .await
        .expect("seed skewed boards");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{url_with_dbname, wait_until_blocking};

    #[test]
    fn a_blocking_wait_ends_when_the_condition_holds_and_fails_at_its_deadline() {
        let mut calls = 0;
        let held = wait_until_blocking(Duration::from_secs(5), || {
            calls += 1;
            calls == 3
        });
        assert!(held.is_some_and(|d| d < Duration::from_secs(1)), "{held:?}");
        assert_eq!(calls, 3);
        let mut checks = 0;
        let never = wait_until_blocking(Duration::from_millis(100), || {
            checks += 1;
            false
        });
        assert_eq!(
            never, None,
            "a deadline that passed is None, not a silent move on"
        );
        assert!(checks >= 2, "checked again at the deadline: {checks}");
    }

    #[test]
    fn dbname_replacement() {
        assert_eq!(
            url_with_dbname("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            url_with_dbname("postgres://u:p@h/postgres?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(
            url_with_dbname("postgres://h:5432", "x"),
            "postgres://h:5432/x"
        );
    }
}
