//! The reconciler's pass history and the operators' audit log (V11): bounded by the insert
//! itself, read newest first, and each board's last result found among the recent reports.

use ledgerboard_core::db::{Database, history};
use ledgerboard_testkit::TestDb;

use crate::common::{Env, env};
use serde_json::json;

async fn database() -> (TestDb, Database) {
    let Env { test_db, db, .. } = env().await;
    (test_db, db)
}

fn report(n: u64, boards: &[(&str, u64)]) -> serde_json::Value {
    json!({
        "pass": n,
        "totals": { "checked": n },
        "boards": boards
            .iter()
            .map(|(b, corrupt)| json!({ "board": b, "corrupt": corrupt }))
            .collect::<Vec<_>>(),
    })
}

#[tokio::test]
async fn the_history_keeps_the_newest_thousand_passes_per_namespace() {
    let (test_db, db) = database().await;
    for n in 1..=1_005 {
        history::record_pass(&db, "ns", &report(n, &[]))
            .await
            .expect("record");
    }
    history::record_pass(&db, "other", &report(1, &[]))
        .await
        .expect("record");
    let admin = test_db.client().await;
    let kept: i64 = admin
        .query_one(
            "SELECT count(*) FROM reconciler_passes WHERE namespace = 'ns'",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(kept, 1_000);
    let passes = history::passes(&db, "ns", 3).await.expect("passes");
    let numbers: Vec<u64> = passes
        .iter()
        .map(|p| p.report["pass"].as_u64().expect("pass number"))
        .collect();
    assert_eq!(numbers, [1_005, 1_004, 1_003], "newest first");
    let oldest: i64 = admin
        .query_one(
            "SELECT min((report->>'pass')::int8) FROM reconciler_passes WHERE namespace = 'ns'",
            &[],
        )
        .await
        .expect("oldest")
        .get(0);
    assert_eq!(oldest, 6, "the oldest five went");
    assert_eq!(
        history::passes(&db, "other", 10)
            .await
            .expect("passes")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_boards_last_result_is_the_newest_report_that_lists_it() {
    let (_test_db, db) = database().await;
    history::record_pass(&db, "ns", &report(1, &[("a", 3), ("b", 1)]))
        .await
        .expect("record");
    history::record_pass(&db, "ns", &report(2, &[("a", 0)]))
        .await
        .expect("record");
    history::record_pass(&db, "other", &report(3, &[("b", 9)]))
        .await
        .expect("record");
    let mut found = history::last_board_results(&db, "ns", &["a", "b", "c"])
        .await
        .expect("results");
    found.sort_by(|x, y| x.0.cmp(&y.0));
    let seen: Vec<(&str, u64)> = found
        .iter()
        .map(|(b, p)| (b.as_str(), p.report["corrupt"].as_u64().expect("corrupt")))
        .collect();
    assert_eq!(
        seen,
        [("a", 0), ("b", 1)],
        "a from pass 2, b from pass 1, c nowhere"
    );

    // The audit log: operator actions and moderation commands, newest first.
    history::record_action(&db, "ops", "rebuild", Some("a"), None, &json!({}))
        .await
        .expect("audit");
    history::record_action(&db, "ops", "requeue", None, None, &json!({ "ids": [1] }))
        .await
        .expect("audit");
    let log = history::actions(&db, 10).await.expect("log");
    let actions: Vec<&str> = log.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["requeue", "rebuild"]);
}
