//! lbctl: board.

use super::*;

#[tokio::test]
async fn board_create_update_show_and_list() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let json = |out: &str| -> serde_json::Value {
        serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    };

    let (ok, out, err) = lbctl(&db, &["board", "show", "--board", "weekly", "--json"]);
    assert!(ok, "{err}");
    let implicit = json(&out);
    assert_eq!(
        (implicit["operator"].clone(), implicit["declared"].clone()),
        (serde_json::json!("add"), serde_json::json!(false))
    );

    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "lap-1",
            "--operator",
            "best",
            "--sort",
            "ascending",
            "--tie-break",
            "earliest",
            "--min-score",
            "1",
            "--max-score",
            "600000",
            "--display-name",
            "Lap 1",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let created = json(&out);
    assert_eq!(created["revision"], 1);
    assert_eq!(created["sort"], "ascending");
    let (ok, _, err) = lbctl(
        &db,
        &["board", "create", "--board", "lap-1", "--operator", "best"],
    );
    assert!(!ok, "a second create is refused");
    assert!(err.contains("already declared"), "{err}");

    // An update changes what it names and keeps the rest; negative numbers are values.
    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "update",
            "--board",
            "lap-1",
            "--min-score",
            "-5",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let updated = json(&out);
    assert_eq!(
        (
            updated["min_score"].clone(),
            updated["max_score"].clone(),
            updated["revision"].clone()
        ),
        (
            serde_json::json!(-5),
            serde_json::json!(600000),
            serde_json::json!(2)
        )
    );
    let (ok, out, err) = lbctl(
        &db,
        &["board", "update", "--board", "lap-1", "--min-score", "-5"],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("unchanged") && out.contains("revision=2"),
        "{out}"
    );

    // Bad values name their flag; a board with entries keeps its rule.
    let (ok, _, err) = lbctl(
        &db,
        &["board", "create", "--board", "x", "--operator", "max"],
    );
    assert!(!ok);
    assert!(err.contains("--operator"), "{err}");
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "x",
            "--operator",
            "best",
            "--max-delta",
            "3",
        ],
    );
    assert!(!ok);
    assert!(err.contains("add boards only"), "{err}");
    db.client()
        .await
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version) VALUES ('lap-1', 'u', 7, 1)",
            &[],
        )
        .await
        .expect("an entry");
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "update",
            "--board",
            "lap-1",
            "--operator",
            "latest",
        ],
    );
    assert!(!ok);
    assert!(err.contains("has entries"), "{err}");

    let (ok, _, err) = lbctl(
        &db,
        &["board", "create", "--board", "daily", "--operator", "add"],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = lbctl(&db, &["board", "list", "--json"]);
    assert!(ok, "{err}");
    let boards: Vec<String> = json(&out)
        .as_array()
        .expect("an array")
        .iter()
        .map(|d| d["board"].as_str().expect("board").to_owned())
        .collect();
    assert_eq!(boards, ["daily", "lap-1"]);
    let (ok, out, err) = lbctl(&db, &["board", "list", "--after", "daily"]);
    assert!(ok, "{err}");
    // Still best: the refused update changed nothing.
    assert!(
        out.starts_with("lap-1\tdeclared\toperator=best\tsort=ascending"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[tokio::test]
async fn user_ban_unban_erase_and_board_remove_entry() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let client = db.client().await;
    // Entries and their events as score commands write them (their outbox rows left out).
    client
        .batch_execute(
            "INSERT INTO user_scores (board_id, user_id, score, version, metadata) VALUES
               ('b', 'cheat', 90, 1, '{\"car\": \"red\"}'), ('b', 'fair', 50, 1, NULL),
               ('w', 'cheat', 7, 1, NULL);
             INSERT INTO score_events (event_id, board_id, user_id, submitted, operator, score, version, metadata) VALUES
               ('11111111-1111-4111-8111-111111111111', 'b', 'cheat', 90, 'add', 90, 1, '{\"car\": \"red\"}'),
               ('22222222-2222-4222-8222-222222222222', 'b', 'fair', 50, 'add', 50, 1, NULL),
               ('33333333-3333-4333-8333-333333333333', 'w', 'cheat', 7, 'add', 7, 1, NULL);",
        )
        .await
        .expect("plant entries");
    let visible = async || -> Vec<(String, String)> {
        db.client()
            .await
            .query(
                "SELECT board_id, user_id FROM user_scores WHERE NOT hidden ORDER BY 1, 2",
                &[],
            )
            .await
            .expect("entries")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    let id = "44444444-4444-4444-8444-444444444444";
    let ban = [
        "user", "ban", "--user", "cheat", "--reason", "aimbot", "--id", id, "--actor", "ops",
    ];
    let (ok, out, err) = lbctl(&db, &ban);
    assert!(ok, "{err}");
    assert!(
        out.contains("ban cheat: action id 44444444-4444-4444-8444-444444444444")
            && out.contains("by ops")
            && out.contains("entries: 2 (boards: b, w)"),
        "{out}"
    );
    assert_eq!(visible().await, [("b".into(), "fair".into())]);
    let (ok, out, err) = lbctl(&db, &ban);
    assert!(ok, "{err}");
    assert!(out.contains("a repeat of this id"), "{out}");
    let mut other = ban;
    other[5] = "wallhack";
    let (ok, _, err) = lbctl(&db, &other);
    assert!(!ok, "a reused id with another reason must fail");
    assert!(err.contains("already used"), "{err}");

    let (ok, out, err) = lbctl(
        &db,
        &[
            "user", "unban", "--user", "cheat", "--reason", "appeal", "--json",
        ],
    );
    assert!(ok, "{err}");
    let unban: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(unban["result"]["entries"], 2, "{unban}");
    assert!(
        unban["actor"]
            .as_str()
            .is_some_and(|a| a.starts_with("lbctl:")),
        "{unban}"
    );
    assert_eq!(visible().await.len(), 3);

    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "remove-entry",
            "--board",
            "w",
            "--user",
            "cheat",
            "--reason",
            "smurf",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("entries: 1 (boards: w)"), "{out}");
    assert_eq!(
        visible().await,
        [("b".into(), "cheat".into()), ("b".into(), "fair".into())]
    );

    // Erase: what went from PostgreSQL, and Redis still to do (no projector runs here).
    let erase_id = "55555555-5555-4555-8555-555555555555";
    let erase = [
        "user",
        "erase",
        "--user",
        "cheat",
        "--reason",
        "GDPR request 7",
        "--id",
        erase_id,
        "--wait-secs",
        "1",
    ];
    let (ok, out, err) = lbctl(&db, &erase);
    assert!(ok, "{err}");
    assert!(
        out.contains("postgresql: 1 entries, 1 removal tombstones and no ban removed; 2 events, 5 outbox rows and 3 earlier audit rows pseudonymised"),
        "{out}"
    );
    assert!(
        out.contains("redis: 2 boards still wait for the projector"),
        "{out}"
    );
    assert_eq!(visible().await, [("b".into(), "fair".into())]);
    let named: i64 = client
        .query_one(
            "SELECT (SELECT count(*) FROM score_events WHERE user_id = 'cheat' OR metadata IS NOT NULL)
                  + (SELECT count(*) FROM moderation_actions WHERE user_id = 'cheat')
                  + (SELECT count(*) FROM removed_entries WHERE user_id = 'cheat')",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(named, 0, "no event, audit row or tombstone names the user");
    // As the projector would: the erasure's rows published (their user id goes with it).
    client
        .execute(
            "UPDATE leaderboard_outbox SET published_at = now(), user_id = 'erased'
             WHERE moderation = 'erase'",
            &[],
        )
        .await
        .expect("publish");
    let (ok, out, err) = lbctl(&db, &erase);
    assert!(ok, "{err}");
    assert!(out.contains("a repeat of this id"), "{out}");
    assert!(out.contains("redis: every trace removed"), "{out}");
}

#[tokio::test]
async fn board_reset_and_period_close_show_verify() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "cup",
            "--operator",
            "add",
            "--reset",
            "manual",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("reset=manual\ttime_zone=UTC"), "{out}");
    let (ok, _, err) = lbctl(&db, &["board", "reset", "--board", "plain"]);
    assert!(!ok && err.contains("never resets"), "{err}");

    // Two entries in the first period, written as commands would (the board's period id is
    // the declaration's second: board_resets' first row), projected already.
    let client = db.client().await;
    let period = common::first_period(&client, "cup").await;
    let cup = format!("cup~{period}");
    client
        .execute(
            "WITH e AS (
                 INSERT INTO score_events (event_id, board_id, user_id, submitted, operator, score, version)
                 VALUES (gen_random_uuid(), $1, 'ann', 30, 'add', 30, 1),
                        (gen_random_uuid(), $1, 'bob', 20, 'add', 20, 1)
                 RETURNING event_id, board_id, user_id, score, version)
             INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT board_id, user_id, score, version FROM e",
            &[&cup],
        )
        .await
        .expect("entries");

    let close = |json: bool| {
        let mut args = vec![
            "period",
            "close",
            "--board",
            "cup",
            "--period",
            period.as_str(),
        ];
        if json {
            args.push("--json");
        }
        lbctl(&db, &args)
    };
    let (ok, _, err) = close(false);
    assert!(!ok && err.contains("has not ended"), "{err}");
    let (ok, out, err) = lbctl(&db, &["board", "reset", "--board", "cup", "--json"]);
    assert!(ok, "{err}");
    let reset: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(reset["period"].as_str() > Some(period.as_str()), "{reset}");
    // The reset opens the next period at the next whole second of the database clock.
    common::wait_for_the_next_period(&client, "cup", &cup).await;

    let (ok, out, err) = close(true);
    assert!(ok, "{err}");
    let closed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (&closed["result"], &closed["close"]["entries"]),
        (&serde_json::json!("closed"), &serde_json::json!(2)),
        "{closed}"
    );
    let (ok, out, err) = close(false);
    assert!(ok && out.contains("already closed"), "{out}{err}");

    // An entry is removed from a period by naming it (the board holds none itself).
    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "remove-entry",
            "--board",
            "cup",
            "--period",
            period.as_str(),
            "--user",
            "bob",
            "--reason",
            "test account",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains(&format!("\"{cup}\"")), "{out}");
    let left: i64 = client
        .query_one(
            "SELECT count(*) FROM user_scores WHERE board_id = $1 AND user_id = 'bob'",
            &[&cup],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(left, 0, "bob's entry left the period");
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "remove-entry",
            "--board",
            "cup",
            "--period",
            "last-week",
            "--user",
            "bob",
            "--reason",
            "r",
        ],
    );
    assert!(!ok && err.contains("--period"), "{err}");
    let (ok, out, err) = lbctl(
        &db,
        &["period", "show", "--board", "cup", "--period", &period],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("1\t1\tann\t30") && out.contains("2\t2\tbob\t20"),
        "{out}"
    );
    let (ok, out, err) = lbctl(
        &db,
        &["period", "verify", "--board", "cup", "--period", &period],
    );
    assert!(ok && out.contains("\tholds\t"), "{out}{err}");

    // A frozen row edited by hand: verify says so and fails.
    client
        .execute(
            "UPDATE period_standings SET score = 31 WHERE user_id = 'ann'",
            &[],
        )
        .await
        .expect("tamper");
    let (ok, out, _) = lbctl(
        &db,
        &["period", "verify", "--board", "cup", "--period", &period],
    );
    assert!(
        !ok && out.contains("DOES NOT HOLD") && out.contains("disagree=1"),
        "{out}"
    );
}
