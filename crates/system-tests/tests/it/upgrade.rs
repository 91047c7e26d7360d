//! A rolling upgrade, seen from the release being replaced: this build's daemons, as
//! processes, against the next release's schema. The test migrates its database as `lbctl
//! migrate` does, then applies a migration of its own as version N+1 (an expand-only change,
//! recorded in refinery's history table by refinery itself) and a row that the next release
//! would write into the new columns. The api, the projector and the reconciler of this build
//! must start, say that they run one migration behind, and keep commands, projection, reads and
//! reconciliation working. Two migrations ahead, each must refuse to start and say why.

use std::time::Duration;

use ledgerboard_core::db::known_schema_version;
use ledgerboard_testkit::{
    Process, TestDb, TestRedis, apply_next_migrations, daemon_env, http_request, migrate,
    wait_until_blocking, workspace_binary,
};

const DAEMONS: [&str; 3] = [
    "ledgerboard-api",
    "ledgerboard-projector",
    "ledgerboard-reconciler",
];
const BOARD: &str = "upgrade";

/// The next release's migration: expand only (docs/operations.md, "Rolling upgrades and
/// rollbacks"): nullable columns on the tables this build writes, a table it does not know,
/// an index on that table.
const NEXT_RELEASE: (&str, &str) = (
    "next_release_expand",
    r#"
ALTER TABLE user_scores ADD COLUMN display_name text;
ALTER TABLE leaderboard_outbox ADD COLUMN region text;
CREATE TABLE user_badges (
    board_id text COLLATE "C" NOT NULL,
    user_id  text COLLATE "C" NOT NULL,
    badge    text NOT NULL,
    PRIMARY KEY (board_id, user_id, badge)
);
CREATE INDEX IF NOT EXISTS user_badges_badge ON user_badges (badge);
"#,
);

/// The release after it: any migration at all; this build must not run against it.
const RELEASE_AFTER: (&str, &str) = (
    "release_after_expand",
    "ALTER TABLE user_badges ADD COLUMN granted_at timestamptz;",
);

fn env_with(db: &TestDb, redis: &TestRedis) -> Vec<(String, String)> {
    let mut env = daemon_env(db, redis);
    for (k, v) in [
        ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
        ("LEDGERBOARD__PROJECTOR__POLL_INTERVAL_MS", "50"),
        ("LEDGERBOARD__RECONCILER__INTERVAL_MS", "3600000"),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    env
}

/// Runs a workspace binary to its end: (success, stdout, stderr).
fn run(name: &str, args: &[&str], env: &[(String, String)]) -> (bool, String, String) {
    let output = std::process::Command::new(workspace_binary(name))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap_or_else(|e| panic!("run {name}: {e}"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn post(api: &str, user: &str, delta: i64) -> (u16, String) {
    let body = format!(
        r#"{{"event_id":"{}","user_id":"{user}","delta":{delta}}}"#,
        uuid::Uuid::new_v4()
    );
    http_request(api, "POST", &format!("/v1/boards/{BOARD}/scores"), &body)
}

/// `(user, score)` of the board's top page read with `consistency`.
fn top(api: &str, consistency: &str) -> Vec<(String, i64)> {
    let (status, body) = http_request(
        api,
        "GET",
        &format!("/v1/boards/{BOARD}/top?limit=10&consistency={consistency}"),
        "",
    );
    assert_eq!(status, 200, "{body}");
    let value: serde_json::Value = serde_json::from_str(&body).expect("JSON answer");
    value["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["user_id"].as_str().expect("user_id").to_owned(),
                e["score"].as_i64().expect("score"),
            )
        })
        .collect()
}

#[tokio::test]
async fn this_release_runs_against_the_next_schema_and_refuses_the_one_after() {
    let known = known_schema_version();
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    migrate(&db.url).await;
    assert_eq!(apply_next_migrations(&db, &[NEXT_RELEASE]).await, known + 1);

    // A member the next release wrote, with its new columns set.
    db.client()
        .await
        .batch_execute(&format!(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
               VALUES ('33333333-3333-4333-8333-333333333333', '{BOARD}', 'from-next', 5, 5, 1);
             INSERT INTO user_scores (board_id, user_id, score, version, display_name)
               VALUES ('{BOARD}', 'from-next', 5, 1, 'Nova');
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version, region)
               VALUES ('33333333-3333-4333-8333-333333333333', '{BOARD}', 'from-next', 5, 1, 'eu');
             INSERT INTO user_badges VALUES ('{BOARD}', 'from-next', 'early');"
        ))
        .await
        .expect("the next release's rows");

    let env = env_with(&db, &redis);
    let env_refs = ledgerboard_testkit::env_refs(&env);
    let mut daemons: Vec<Process> = Vec::new();
    let mut api = String::new();
    for name in DAEMONS {
        let mut process = Process::start(&workspace_binary(name).to_string_lossy(), &[], &env_refs);
        let started = format!("{name} started");
        if name == "ledgerboard-api" {
            api = process
                .wait_for_addr(&started, Duration::from_secs(20))
                .to_string();
        }
        assert!(
            process.wait_for_log(&started, Duration::from_secs(20)),
            "{name} did not start against schema N+1: {}",
            process.stderr()
        );
        let said = format!(
            "schema version {}, one migration ahead of this binary's {known}: running as the previous release",
            known + 1
        );
        assert!(
            process.stderr().contains(&said),
            "{name} does not say it runs one migration behind: {}",
            process.stderr()
        );
        daemons.push(process);
    }

    // Commands: a new member, one more, and the next release's member.
    for (user, delta) in [("user-a", 10), ("user-b", 7), ("from-next", 3)] {
        let (status, body) = post(&api, user, delta);
        assert_eq!(status, 201, "{user}: {body}");
    }
    let want = vec![
        ("user-a".to_owned(), 10),
        ("from-next".to_owned(), 8),
        ("user-b".to_owned(), 7),
    ];
    // Projection: `eventual` answers from Redis only.
    let mut last = Vec::new();
    let projected = wait_until_blocking(Duration::from_secs(20), || {
        last = top(&api, "eventual");
        last == want
    });
    assert!(projected.is_some(), "the projection holds {last:?}");
    assert_eq!(top(&api, "strong"), want);
    let (status, body) = http_request(
        &api,
        "GET",
        &format!("/v1/boards/{BOARD}/users/from-next?min_version=2"),
        "",
    );
    assert_eq!(status, 200, "{body}");

    let client = db.client().await;
    let row = client
        .query_one(
            &format!(
                "SELECT (SELECT count(*) FROM leaderboard_outbox WHERE published_at IS NULL),
                        (SELECT display_name FROM user_scores WHERE board_id = '{BOARD}' AND user_id = 'from-next'),
                        (SELECT count(*) FROM leaderboard_outbox WHERE region IS NOT NULL)"
            ),
            &[],
        )
        .await
        .expect("outbox and the new columns");
    assert_eq!(row.get::<_, i64>(0), 0, "rows left pending");
    // This build's update kept the column it does not know; its rows leave the new one NULL.
    assert_eq!(row.get::<_, Option<String>>(1).as_deref(), Some("Nova"));
    assert_eq!(row.get::<_, i64>(2), 1);

    for (name, mut process) in DAEMONS.into_iter().zip(daemons) {
        let status = process.terminate(Duration::from_secs(15));
        assert!(
            status.is_some_and(|s| s.success()),
            "{name} stop: {status:?} {}",
            process.stderr()
        );
    }

    // The reconciler's pass finds the projection whole.
    let (ok, out, err) = run("ledgerboard-reconciler", &["--once"], &env);
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(report["completed"], true, "{report}");
    assert_eq!(
        (
            report["totals"]["current"].as_u64(),
            report["totals"]["repaired"].as_u64()
        ),
        (Some(3), Some(0)),
        "{report}"
    );

    // This release's lbctl: status says where the schema is; migrate (a rollback's migration
    // job) leaves it as it is.
    let (ok, out, err) = run("lbctl", &["status"], &env);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "version {} (this lbctl knows {known}): schema version {}, one migration ahead",
            known + 1,
            known + 1
        )),
        "{out}"
    );
    let (ok, out, err) = run("lbctl", &["migrate"], &env);
    assert!(ok, "{err}");
    assert!(out.contains("nothing to apply"), "{out}");

    // Two migrations ahead: every daemon, and lbctl migrate, refuse.
    assert_eq!(
        apply_next_migrations(&db, &[NEXT_RELEASE, RELEASE_AFTER]).await,
        known + 2
    );
    for name in DAEMONS {
        let mut process = Process::start(&workspace_binary(name).to_string_lossy(), &[], &env_refs);
        let status = process
            .wait_for_exit(Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{name} kept running against schema N+2"));
        assert!(!status.success(), "{name} must refuse schema N+2");
        let said = format!(
            "the database schema is version {}, 2 migrations newer than version {known} that this binary knows",
            known + 2
        );
        let stderr = process.stderr();
        assert!(
            stderr.contains(&said) && stderr.contains("deploy the newer binary"),
            "{name}: {stderr}"
        );
    }
    let (ok, _, err) = run("lbctl", &["migrate"], &env);
    assert!(!ok && err.contains("use the newer lbctl"), "{err}");
}
