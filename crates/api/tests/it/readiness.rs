//! `/readyz` tells the truth: it answers from the last successful heartbeat to PostgreSQL (a
//! connection of its own), so commands that hold every pooled connection do not make the api
//! unready, while a PostgreSQL that stops answering does, once the staleness bound has passed.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use ledgerboard_harness::http;
use ledgerboard_testkit::{Process, TEST_TOKEN, TestDb, admin_database_url, migrate, wait_until};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(10);

/// An api process (public and admin address) with `extra` settings.
fn start(db: &TestDb, extra: &[(&str, &str)]) -> (Process, SocketAddr, SocketAddr) {
    let mut settings = vec![("LEDGERBOARD__API__READINESS_STALE_MS", "1000")];
    settings.extend_from_slice(extra);
    common::api_process(db, &settings)
}

async fn readyz(admin: SocketAddr) -> (u16, Value) {
    let (status, body) = http::request(admin, "GET", "/readyz", &[], String::new(), LIMIT)
        .await
        .unwrap_or_else(|e| panic!("readyz: {e}"));
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")),
    )
}

async fn admin_client() -> tokio_postgres::Client {
    let (client, connection) =
        tokio_postgres::connect(&admin_database_url(), tokio_postgres::NoTls)
            .await
            .expect("admin connection");
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_holding_every_pooled_connection_do_not_make_the_api_unready() {
    let db = TestDb::create().await;
    migrate(&db.url).await;
    let (mut api, public, admin) = start(
        &db,
        &[
            // One connection for commands, which a command blocked on a lock holds.
            ("LEDGERBOARD__DATABASE__POOL_MAX_SIZE", "1"),
            ("LEDGERBOARD__DATABASE__STATEMENT_TIMEOUT_MS", "30000"),
        ],
    );
    assert_eq!(readyz(admin).await.0, 200);

    // PostgreSQL is "slow": commands wait on a lock, and hold the pool's one connection.
    let mut locker = db.client().await;
    let lock = locker.transaction().await.expect("begin");
    lock.batch_execute("LOCK TABLE user_scores IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("lock");
    let command = tokio::spawn(async move {
        let bearer = format!("Bearer {TEST_TOKEN}");
        let body = format!(
            r#"{{"event_id":"{}","user_id":"ann","delta":1}}"#,
            uuid::Uuid::new_v4()
        );
        http::request(
            public,
            "POST",
            "/v1/boards/slow/scores",
            &[("Authorization", &bearer)],
            body,
            Duration::from_secs(40),
        )
        .await
    });
    let watcher = db.client().await;
    wait_until(LIMIT, || async {
        watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                  WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .await
            .is_ok_and(|row| row.get::<_, i64>(0) > 0)
    })
    .await
    .expect("the command waits on the lock");
    // Twice the staleness bound with the pool taken: still ready, PostgreSQL still answering.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let (status, body) = readyz(admin).await;
    assert_eq!(status, 200, "a busy pool made the api unready: {body}");
    assert_eq!(body["checks"]["postgres"]["ok"], true, "{body}");

    lock.commit().await.expect("unlock");
    let (status, body) = command
        .await
        .expect("command task")
        .expect("the command is answered once the lock is gone");
    assert_eq!(status, 201, "{body}");
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_that_stops_answering_makes_the_api_unready_and_back() {
    let db = TestDb::create().await;
    migrate(&db.url).await;
    let (mut api, _public, admin) = start(&db, &[]);
    assert_eq!(readyz(admin).await.0, 200);

    // The database refuses every new session, and the api's are ended: PostgreSQL is gone for
    // the api.
    let admin_db = admin_client().await;
    admin_db
        .batch_execute(&format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false;
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}';",
            name = db.name
        ))
        .await
        .expect("cut the database off");
    let last = std::sync::Mutex::new(Value::Null);
    wait_until(LIMIT, || async {
        let (status, body) = readyz(admin).await;
        *last.lock().expect("last") = body;
        status == 503
    })
    .await
    .unwrap_or_else(|| panic!("still ready without PostgreSQL: {:?}", last.lock()));
    let last = last.into_inner().expect("last");
    assert_eq!(last["checks"]["postgres"]["ok"], false, "{last}");
    assert!(last["checks"]["postgres"]["error"].is_string(), "{last}");
    // Alive all the same: no restart for a dependency's outage.
    let (status, _) = http::request(admin, "GET", "/healthz", &[], String::new(), LIMIT)
        .await
        .expect("healthz");
    assert_eq!(status, 200);

    admin_db
        .batch_execute(&format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS true",
            db.name
        ))
        .await
        .expect("let the database answer again");
    wait_until(LIMIT, || async { readyz(admin).await.0 == 200 })
        .await
        .expect("ready again once PostgreSQL answers");
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));
}
