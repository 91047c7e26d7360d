//! The claim must be served by the pending index whatever the outbox looked like when its plan
//! was cached. Seen on this kind of machine: a generic plan built on an empty outbox, kept
//! under load, seq-scanned and sorted the whole table and cut throughput by 4.

use ledgerboard_core::config::DatabaseSettings;
use ledgerboard_core::db::{migrate, outbox};
use ledgerboard_testkit::TestDb;

async fn migrated_db() -> (TestDb, tokio_postgres::Client) {
    let db = TestDb::create().await;
    let settings = DatabaseSettings {
        url: db.url.as_str().into(),
        ..DatabaseSettings::default()
    };
    migrate(&settings).await.expect("migrate");
    let client = db.client().await;
    (db, client)
}

/// The plan of a prepared statement, as text.
async fn plan(client: &tokio_postgres::Client, explain: &str) -> String {
    client
        .query(explain, &[])
        .await
        .unwrap_or_else(|e| panic!("{explain}: {e}"))
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_index_served(plan: &str, what: &str) {
    assert_pending_only(plan, what);
    assert!(!plan.contains("Sort"), "{what} has a Sort:\n{plan}");
}

/// The plan reads the pending rows only, through a pending index: never the published ones
/// (no scan of the table, no join over it). It may sort them: a plan made while the outbox
/// has no statistics counts the pending rows as one or two (the default selectivity of each
/// `IS NULL`), and a sort of two rows is the cheapest plan it sees (seen in most full runs of
/// this suite, never alone). The outbox's autovacuum analyzes it every 5,000 changed rows
/// (`the_outbox_is_vacuumed_and_analyzed_by_row_count`), which replans it: then it walks the
/// index in order.
fn assert_pending_only(plan: &str, what: &str) {
    assert!(
        plan.contains("leaderboard_outbox_pending"),
        "{what} does not use the pending index:\n{plan}"
    );
    for bad in ["Seq Scan", "Hash Join", "Merge Join"] {
        assert!(!plan.contains(bad), "{what} has a {bad}:\n{plan}");
    }
}

#[tokio::test]
async fn claims_use_the_pending_index_after_growing_from_empty() {
    let (_db, client) = migrated_db().await;
    let claim = outbox::CLAIM.sql();
    let lease = outbox::LEASE.sql();
    client
        .batch_execute(&format!(
            "PREPARE claim(bigint) AS {claim};
             PREPARE lease(bigint, text, float8) AS {lease};"
        ))
        .await
        .expect("prepare");
    // Run both on the empty outbox often enough for PostgreSQL to cache a generic plan.
    for _ in 0..8 {
        client
            .batch_execute("BEGIN; EXECUTE claim(500); COMMIT; EXECUTE lease(500, 'w', 1000);")
            .await
            .expect("execute on empty outbox");
    }
    // The steady state: many published rows, a few thousand pending, no ANALYZE yet.
    client
        .batch_execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
               SELECT gen_random_uuid(), 'b', 'u' || g, 1, g, 1 FROM generate_series(1, 200000) g;
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version, published_at)
               SELECT event_id, board_id, user_id, score, version,
                      CASE WHEN score <= 195000 THEN now() END
               FROM score_events ORDER BY score;",
        )
        .await
        .expect("fill outbox");
    assert_pending_only(
        &plan(&client, "EXPLAIN EXECUTE claim(500)").await,
        "claim (cached on empty)",
    );
    assert_pending_only(
        &plan(&client, "EXPLAIN EXECUTE lease(500, 'w', 1000)").await,
        "lease (cached on empty)",
    );
    client
        .batch_execute("ANALYZE leaderboard_outbox")
        .await
        .expect("analyze");
    assert_index_served(
        &plan(&client, "EXPLAIN EXECUTE claim(500)").await,
        "claim (analyzed)",
    );
    assert_index_served(
        &plan(&client, "EXPLAIN EXECUTE lease(500, 'w', 1000)").await,
        "lease (analyzed)",
    );
}

#[tokio::test]
async fn the_outbox_is_vacuumed_and_analyzed_by_row_count() {
    let (_db, client) = migrated_db().await;
    let options: Vec<String> = client
        .query_one(
            "SELECT reloptions FROM pg_class WHERE relname = 'leaderboard_outbox'",
            &[],
        )
        .await
        .expect("reloptions")
        .get(0);
    for expected in [
        "autovacuum_vacuum_scale_factor=0",
        "autovacuum_analyze_scale_factor=0",
        "autovacuum_analyze_threshold=5000",
    ] {
        assert!(
            options.iter().any(|o| o == expected),
            "{expected} missing from {options:?}"
        );
    }
}

/// A backlog analyzed while all of it was pending, then mostly drained before the statistics
/// caught up: the claim must still go straight to the pending rows. (With an ordinary index on
/// `id`, the planner walked it through every published row: 80 ms per claim halfway through a
/// 200k backlog.)
#[tokio::test]
async fn claims_stay_on_the_pending_index_when_statistics_describe_a_backlog() {
    let (_db, client) = migrated_db().await;
    client
        .batch_execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
               SELECT gen_random_uuid(), 'b', 'u' || g, 1, g, 1 FROM generate_series(1, 100000) g;
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version)
               SELECT event_id, board_id, user_id, score, version FROM score_events ORDER BY score;
             ANALYZE leaderboard_outbox;
             UPDATE leaderboard_outbox SET published_at = now() WHERE id <= 90000;",
        )
        .await
        .expect("a drained backlog with stale statistics");
    let claim = outbox::CLAIM.sql().replace("$1", "500");
    assert_index_served(
        &plan(&client, &format!("EXPLAIN {claim}")).await,
        "claim (stale statistics)",
    );
    let lease = outbox::LEASE
        .sql()
        .replace("$1", "500")
        .replace("$2", "'w'")
        .replace("$3", "1000");
    assert_index_served(
        &plan(&client, &format!("EXPLAIN {lease}")).await,
        "lease (stale statistics)",
    );
}
