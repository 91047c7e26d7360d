//! Test fixtures on the real servers: a database of the test's own (created, dropped when the
//! fixture drops) and a Redis namespace of its own (its keys deleted when it drops). Tests run
//! in parallel and share the machine's PostgreSQL and Redis with CI and other tests, so nothing
//! here ever flushes a whole Redis or touches another test's database.
//!
//! The servers are found at `LEDGERBOARD_TEST_DATABASE_URL` (an admin connection, default
//! `postgres://postgres@127.0.0.1:5432/postgres`) and `LEDGERBOARD_TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`).

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

    /// Every key of the namespace, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self.scan();
        keys.sort();
        keys
    }

    fn scan(&self) -> Vec<String> {
        let Ok(client) = redis::Client::open(self.url.as_str()) else {
            return Vec::new();
        };
        let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(5)) else {
            return Vec::new();
        };
        let pattern = format!("{}:*", self.namespace);
        let iter: redis::RedisResult<redis::Iter<String>> = redis::cmd("SCAN")
            .cursor_arg(0)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .clone()
            .iter(&mut conn);
        match iter {
            Ok(it) => it.filter_map(Result::ok).collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Default for TestRedis {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let keys = self.scan();
        if keys.is_empty() {
            return;
        }
        if let Ok(client) = redis::Client::open(self.url.as_str())
            && let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(5))
        {
            for chunk in keys.chunks(500) {
                let _: redis::RedisResult<i64> = redis::cmd("UNLINK").arg(chunk).query(&mut conn);
            }
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

/// A local port on which nothing listens (bound, then released).
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let port = listener.local_addr().expect("free port address").port();
    drop(listener);
    port
}

#[cfg(test)]
mod tests {
    use super::url_with_dbname;

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
