//! lbctl: `competition create|list|show` over a declared board.

use super::*;

#[tokio::test]
async fn a_competition_is_declared_listed_and_shown() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let client = db.client().await;
    // The window from the database clock: an hour ago to an hour from now.
    let row = client
        .query_one(
            "SELECT to_char((now() - interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                    to_char((now() + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
            &[],
        )
        .await
        .expect("the window");
    let (starts, ends): (String, String) = (row.get(0), row.get(1));
    let create = |id: &str| {
        lbctl(
            &db,
            &[
                "competition",
                "create",
                "--id",
                id,
                "--starts-at",
                &starts,
                "--ends-at",
                &ends,
                "--max-size",
                "2",
                "--category",
                "weekend",
                "--prizes",
                r#"[{"from":1,"to":1,"reward":"gold","amount":100}]"#,
                "--json",
            ],
        )
    };
    // Not a declared board yet: refused, saying so.
    let (ok, _, err) = create("cup");
    assert!(!ok && err.contains("not a declared board"), "{err}");
    let (ok, _, err) = lbctl(
        &db,
        &["board", "create", "--board", "cup", "--operator", "best"],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = create("cup");
    assert!(ok, "{err}");
    let cup: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (&cup["state"], &cup["max_size"], &cup["prizes"][0]["reward"]),
        (
            &serde_json::json!("open"),
            &serde_json::json!(2),
            &serde_json::json!("gold")
        ),
        "{out}"
    );
    let (ok, out, err) = lbctl(&db, &["competition", "list", "--state", "open"]);
    assert!(
        ok && out.starts_with("cup\topen\t") && out.contains("entrants 0/2"),
        "{out}{err}"
    );
    let (ok, out, _) = lbctl(&db, &["competition", "list", "--state", "ended", "--json"]);
    assert!(ok && out.trim() == "[]", "{out}");
    let (ok, out, err) = lbctl(&db, &["competition", "show", "--id", "cup"]);
    assert!(ok && out.contains("category=\"weekend\""), "{out}{err}");
}
