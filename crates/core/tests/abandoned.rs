//! A query whose caller gave up: cancelled on the server, and its connection never handed to
//! the next borrower (a late cancel would otherwise cancel whatever that one sends, or the
//! next query would queue behind the abandoned one until the cancel lands).

use std::time::Duration;

use ledgerboard_core::config::DatabaseSettings;
use ledgerboard_core::db::{Database, Op};
use ledgerboard_testkit::{TestDb, wait_until};

#[tokio::test]
async fn an_abandoned_query_is_cancelled_and_its_connection_leaves_the_pool() {
    let test_db = TestDb::create().await;
    let settings = DatabaseSettings {
        url: test_db.url.as_str().into(),
        ..DatabaseSettings::default()
    };
    let db = Database::connect(&settings, "abandoned-test").expect("pool");
    let client = db.client().await.expect("connection");
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    // The caller gives up after 200 ms on a query that would run for a minute.
    let abandoned = tokio::time::timeout(
        Duration::from_millis(200),
        db.bounded(Op::Ping, client, async |c| {
            c.simple_query("SELECT pg_sleep(60)").await
        }),
    )
    .await;
    assert!(abandoned.is_err(), "the sleep cannot have finished");
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
    let gone = wait_until(Duration::from_secs(10), || async {
        admin
            .query_opt(
                "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'",
                &[&pid],
            )
            .await
            .expect("pg_stat_activity")
            .is_none()
    })
    .await;
    assert!(gone.is_some(), "the abandoned pg_sleep still runs");
}
