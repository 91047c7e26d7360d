//! A query whose caller gave up: cancelled on the server, and its connection never handed to
//! the next borrower (a late cancel would otherwise cancel whatever that one sends, or the
//! next query would queue behind the abandoned one until the cancel lands).

use std::time::Duration;

use ledgerboard_core::config::{DatabaseSettings, Millis};
use ledgerboard_core::db::Database;
use ledgerboard_testkit::{TestDb, abandon_a_query, query_stopped};

#[tokio::test]
async fn an_abandoned_query_is_cancelled_and_its_connection_leaves_the_pool() {
    let test_db = TestDb::create().await;
    // A statement_timeout far over the wait below: only the cancel can end the query in time.
    let settings = DatabaseSettings {
        url: test_db.url.as_str().into(),
        statement_timeout_ms: Millis::of(120_000),
        ..DatabaseSettings::default()
    };
    let db = Database::connect(&settings, "abandoned-test").expect("pool");
    // The caller gives up after 200 ms on a query that would run for a minute.
    let pid = abandon_a_query(&db, Duration::from_millis(200)).await;
    assert_eq!(
        db.status().size,
        0,
        "the abandoned connection went back to the pool"
    );
    // The next borrower gets a connection of its own and is answered at once.
    let next = db.client().await.expect("a new connection");
    let next_pid: i32 = next
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("answered")
        .get(0);
    assert_ne!(next_pid, pid);
    // And the abandoned query stops on the server (cancelled, its session closed).
    let admin = test_db.client().await;
    assert!(
        query_stopped(&admin, pid).await,
        "the abandoned pg_sleep still runs"
    );
}
