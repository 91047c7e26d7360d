//! The core tests' one database fixture: a database of the test's own, migrated, with a pool
//! (`db`) for the code under test and a plain client (`client`) for the test's own reads.

use ledgerboard_core::config::{Count, DatabaseSettings};
use ledgerboard_core::db::{Database, migrate};
use std::time::Duration;

use ledgerboard_testkit::{TestDb, wait_until};

pub struct Env {
    /// The database itself: it goes when the fixture does.
    pub test_db: TestDb,
    pub db: Database,
    pub client: tokio_postgres::Client,
}

/// A pool of 24: the largest any core test drives at once (48 clients through 4 groups).
pub async fn env() -> Env {
    let test_db = TestDb::create().await;
    let settings = DatabaseSettings {
        url: test_db.url.as_str().into(),
        pool_max_size: Count::of(24),
        ..DatabaseSettings::default()
    };
    migrate(&settings).await.expect("migrate");
    let db = Database::connect(&settings, "core-test").expect("pool");
    let client = test_db.client().await;
    Env {
        test_db,
        db,
        client,
    }
}

/// Waits until `n` sessions of the database `client` is connected to wait on a lock (a row
/// or an advisory lock): the proof that the statements a test started are blocked where it
/// expects, rather than a sleep after which they might not have got there yet.
pub async fn lock_waits(client: &tokio_postgres::Client, n: i64) {
    let waiting = || async {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .await
            .expect("sessions")
            .get(0);
        waiting >= n
    };
    wait_until(Duration::from_secs(10), waiting)
        .await
        .unwrap_or_else(|| panic!("{n} sessions waiting on a lock within 10 s"));
}

impl Env {
    /// [`lock_waits`] on this database.
    pub async fn wait_for_lock_waits(&self, n: i64) {
        lock_waits(&self.client, n).await;
    }

    /// Marks every outbox row projected, as a projector would (no projector runs in the core
    /// tests): what a period's close waits for.
    pub async fn mark_projected(&self) {
        self.client
            .execute(
                "UPDATE leaderboard_outbox SET published_at = now() WHERE published_at IS NULL",
                &[],
            )
            .await
            .expect("project");
    }

    /// [`lock_waits`] for one session.
    pub async fn wait_for_a_lock_wait(&self) {
        self.wait_for_lock_waits(1).await;
    }
}
