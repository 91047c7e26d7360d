//! lbctl: boards with columns and linked boards (`board create|update --column`, `--feed`).

use super::*;

#[tokio::test]
async fn board_columns_and_feeds_are_declared_shown_and_refused_when_they_cannot_hold() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let json = |out: &str| -> serde_json::Value {
        serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    };
    let racing = |board: &str, extra: &[&str]| {
        let mut args = vec![
            "board",
            "create",
            "--board",
            board,
            "--operator",
            "best",
            "--tie-break",
            "earliest",
            "--column",
            "laps:desc:0:200",
            "--column",
            "time_ms:ascending:1:3600000",
        ];
        args.extend_from_slice(extra);
        lbctl(&db, &args)
    };
    let (ok, _, err) = racing("runs-daily", &["--reset", "daily"]);
    assert!(ok, "{err}");
    let (ok, out, err) = racing("runs", &["--feed", "runs-daily", "--json"]);
    assert!(ok, "{err}");
    let runs = json(&out);
    assert_eq!(
        runs["sort"], "descending",
        "the first column's order is the sort"
    );
    assert_eq!(
        (runs["min_score"].clone(), runs["max_score"].clone()),
        (serde_json::json!(0), serde_json::json!(200))
    );
    assert_eq!(runs["columns"][1]["order"], "ascending");
    assert_eq!(runs["feeds"], serde_json::json!(["runs-daily"]));
    // Text: the columns and feeds in one line.
    let (ok, out, err) = lbctl(&db, &["board", "show", "--board", "runs"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("columns=laps:descending:0:200,time_ms:ascending:1:3600000")
            && out.contains("feeds=runs-daily"),
        "{out}"
    );

    // A board of one column cannot be fed by a racing board.
    let (ok, _, err) = lbctl(
        &db,
        &["board", "create", "--board", "plain", "--operator", "best"],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = lbctl(
        &db,
        &["board", "update", "--board", "runs", "--feed", "plain"],
    );
    assert!(!ok, "other columns are refused");
    assert!(err.contains("rank by other columns"), "{err}");
    // A loop: the fed board feeding its feeder.
    let (ok, _, err) = lbctl(
        &db,
        &["board", "update", "--board", "runs-daily", "--feed", "runs"],
    );
    assert!(!ok, "a loop is refused");
    assert!(err.contains("feeds no other board"), "{err}");
    // A malformed column.
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "bad",
            "--operator",
            "best",
            "--column",
            "laps:up",
        ],
    );
    assert!(!ok, "a malformed column is refused");
    assert!(err.contains("--column"), "{err}");
    // Back to no feeds, and no columns.
    let (ok, out, err) = lbctl(
        &db,
        &["board", "update", "--board", "runs", "--no-feeds", "--json"],
    );
    assert!(ok, "{err}");
    assert!(json(&out).get("feeds").is_none(), "{out}");
    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "update",
            "--board",
            "runs",
            "--no-columns",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    assert!(json(&out).get("columns").is_none(), "{out}");
}
