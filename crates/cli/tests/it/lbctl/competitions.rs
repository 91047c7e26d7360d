//! lbctl: `competition create|list|show` over a declared board; `close` and `verify` of a
//! league's runs.

use super::*;

#[tokio::test]
async fn a_competition_is_declared_listed_and_shown() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let client = db.client().await;
    // The window from the database clock: from ten minutes to an hour from now, so it is
    // still upcoming however slowly the commands below run (from the next second, as without
    // --starts-at, it had opened by the create's answer on a loaded CI machine).
    let row = client
        .query_one(
            "SELECT to_char((now() + interval '10 minutes') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
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
    assert!(!ok && err.contains("declare it first"), "{err}");
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "cup",
            "--operator",
            "best",
            "--reset",
            "manual",
        ],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = create("cup");
    assert!(ok, "{err}");
    let cup: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (&cup["state"], &cup["max_size"], &cup["prizes"][0]["reward"]),
        (
            &serde_json::json!("upcoming"),
            &serde_json::json!(2),
            &serde_json::json!("gold")
        ),
        "{out}"
    );
    let (ok, out, err) = lbctl(&db, &["competition", "list", "--state", "upcoming"]);
    assert!(
        ok && out.starts_with("cup\tupcoming\t") && out.contains("entrants 0/2"),
        "{out}{err}"
    );
    let (ok, out, _) = lbctl(&db, &["competition", "list", "--state", "ended", "--json"]);
    assert!(ok && out.trim() == "[]", "{out}");
    let (ok, out, err) = lbctl(&db, &["competition", "show", "--id", "cup"]);
    assert!(ok && out.contains("category=\"weekend\""), "{out}{err}");
}

#[tokio::test]
async fn a_league_run_is_closed_and_verified_and_a_tampered_digest_fails_the_verify() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "ladder",
            "--operator",
            "best",
            "--reset",
            "every 2s",
        ],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = lbctl(
        &db,
        &[
            "competition",
            "create",
            "--id",
            "ladder",
            "--cohort-size",
            "2",
            "--tiers",
            r#"[{"name":"bronze","promote":1},{"name":"silver","relegate":1}]"#,
        ],
    );
    assert!(
        ok && out.contains("recurring") && out.contains("tiers bronze,silver"),
        "{out}{err}"
    );
    // Three players enter the run open now (the entry function the api calls): two cohorts.
    let client = db.client().await;
    let mut run = String::new();
    for user in ["a", "b", "c"] {
        let row = client
            .query_one(
                "SELECT outcome, run, cohort FROM lb_competition_enter('ladder', $1, NULL)",
                &[&user],
            )
            .await
            .expect("enter");
        let outcome: String = row.get(0);
        assert_eq!(outcome, "entered");
        run = row.get(1);
    }
    let (ok, out, err) = lbctl(
        &db,
        &["competition", "close", "--id", "ladder", "--run", &run],
    );
    assert!(ok, "{err}");
    let closed_or_not = out.starts_with("closed") || out.starts_with("not ended");
    assert!(closed_or_not, "{out}");
    // Once the run has ended, the close freezes its two cohorts (nobody scored).
    let closed = ledgerboard_testkit::wait_until(std::time::Duration::from_secs(10), || {
        let run = run.clone();
        let db = &db;
        async move {
            let (_, out, _) = lbctl(
                db,
                &["competition", "close", "--id", "ladder", "--run", &run],
            );
            out.starts_with("closed") || out.starts_with("already closed")
        }
    })
    .await;
    assert!(closed.is_some(), "the run never closed");
    let (ok, out, err) = lbctl(&db, &["competition", "verify", "--id", "ladder"]);
    assert!(
        ok && out.contains(&format!("{run}\tholds\tboards 2 (2 hold")),
        "{out}{err}"
    );
    // A digest edited by hand: the history does not hold, and lbctl exits 1.
    client
        .execute(
            "UPDATE competition_runs SET digest = md5(digest) WHERE competition_id = 'ladder'",
            &[],
        )
        .await
        .expect("tamper");
    let (ok, out, _) = lbctl(&db, &["competition", "verify", "--id", "ladder"]);
    assert!(
        !ok && out.contains("does not match its record") && out.contains("does not hold"),
        "{out}"
    );
}
