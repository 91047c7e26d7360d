//! A database of the test's own (`TestDb`), its schema, and the queries tests use to watch it.

use std::time::Duration;

use tokio_postgres::NoTls;

use crate::{unique_suffix, wait_until};

pub fn admin_database_url() -> String {
    std::env::var("LEDGERBOARD_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
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
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e:?}"));
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
                    eprintln!("warning: could not drop test database {name}: {e:?}");
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
        // Debug, not Display: tokio-postgres prints only "db error" for what the server said
        // (a CI run once failed 16 tests with nothing more to go on).
        .unwrap_or_else(|e| panic!("connect to the test PostgreSQL: {e:?}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

pub(crate) fn url_with_dbname(url: &str, dbname: &str) -> String {
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
