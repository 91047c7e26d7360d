//! lbctl: `webhook create|list|show|update|delete|parked|requeue` as an operator runs them.

use super::*;

#[tokio::test]
async fn a_webhook_is_created_shown_updated_requeued_and_deleted() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    // http:// is refused without --allow-http, and says how to allow it.
    let (ok, _, err) = lbctl(&db, &["webhook", "create", "--url", "http://127.0.0.1:9/h"]);
    assert!(!ok && err.contains("http://"), "{err}");
    // A loopback address is refused without --allow-private-addresses, naming it and the flag;
    // with both flags it is a local receiver like any other.
    let local = [
        "webhook",
        "create",
        "--url",
        "http://127.0.0.1:9/h",
        "--allow-http",
    ];
    let (ok, _, err) = lbctl(&db, &local);
    assert!(
        !ok && err.contains("127.0.0.1 is a loopback address")
            && err.contains("--allow-private-addresses"),
        "{err}"
    );
    let (ok, _, err) = lbctl(&db, &[&local[..], &["--allow-private-addresses"]].concat());
    assert!(ok, "{err}");
    let (ok, out, err) = lbctl(
        &db,
        &[
            "webhook",
            "create",
            "--url",
            "https://example.com/hooks",
            "--kind",
            "score.accepted",
            "--board",
            "b1,b2",
            "--lanes",
            "3",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let created: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let id = created["id"].as_str().expect("id").to_owned();
    let secret = created["secret"].as_str().expect("secret").to_owned();
    assert!(secret.starts_with("whsec_"), "{created}");
    assert_eq!(created["lanes"], 3);
    assert_eq!(created["boards"], serde_json::json!(["b1", "b2"]));

    let (ok, out, err) = lbctl(&db, &["webhook", "show", "--id", &id]);
    assert!(ok, "{err}");
    assert!(out.contains("lane 2") && !out.contains(&secret), "{out}");
    let (ok, out, _) = lbctl(&db, &["webhook", "list"]);
    assert!(
        ok && out.contains(&id) && out.contains("kinds=score.accepted"),
        "{out}"
    );
    let (ok, out, err) = lbctl(
        &db,
        &[
            "webhook",
            "update",
            "--id",
            &id,
            "--all-boards",
            "--disable",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let updated: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(updated["enabled"], false);
    assert_eq!(updated["boards"], serde_json::json!([]));

    // A parked delivery (as the dispatcher parks one), listed and requeued.
    let client = db.client().await;
    client
        .execute(
            "INSERT INTO webhook_parked (subscription_id, position, event_id, kind, board_id, body, attempts, last_error)
             VALUES ($1, 7, gen_random_uuid(), 'score.accepted', 'b1', '{}', 12, 'answered 500')",
            &[&id],
        )
        .await
        .expect("park");
    let (ok, out, _) = lbctl(&db, &["webhook", "parked", "--id", &id]);
    assert!(
        ok && out.contains("answered 500") && out.contains("\tparked"),
        "{out}"
    );
    let (ok, _, err) = lbctl(&db, &["webhook", "requeue", "--id", &id]);
    assert!(!ok && err.contains("--all"), "{err}");
    let (ok, out, err) = lbctl(&db, &["webhook", "requeue", "--id", &id, "--position", "7"]);
    assert!(ok && out.contains("requeued 1"), "{out}{err}");
    let (ok, out, _) = lbctl(&db, &["webhook", "parked", "--id", &id]);
    assert!(ok && out.contains("requeued"), "{out}");

    let (ok, _, err) = lbctl(&db, &["webhook", "delete", "--id", &id]);
    assert!(ok, "{err}");
    let (ok, _, err) = lbctl(&db, &["webhook", "show", "--id", &id]);
    assert!(!ok && err.contains("no such webhook subscription"), "{err}");
}
