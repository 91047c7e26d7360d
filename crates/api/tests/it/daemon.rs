//! `ledgerboard-api` as a process on a real socket.

use crate::common;

use std::time::Duration;

use ledgerboard_testkit::{Process, TestDb, TestRedis, daemon_env, http_request, migrate};

const BINARY: &str = env!("CARGO_BIN_EXE_ledgerboard-api");

#[tokio::test]
async fn starts_refuses_an_unmigrated_database_and_stops_cleanly() {
    // Any free port: nothing connects to it, and parallel tests never compete for one.
    ledgerboard_testkit::check_daemon_lifecycle(
        BINARY,
        "ledgerboard-api",
        &[("LEDGERBOARD__API__LISTEN", "127.0.0.1:0")],
    )
    .await;
}

/// The issue's acceptance scenario: one command posted twice with the same event id leaves one
/// event, one outbox row and the score applied once; the second answer says duplicate.
#[tokio::test]
async fn a_command_posted_twice_applies_once() {
    let db = TestDb::create().await;
    migrate(&db.url).await;
    // The daemon binds a port of its own choice and logs it: no port found free and bound again.
    let (mut api, listen, _admin) = common::api_process(&db, &[]);
    let listen = listen.to_string();

    let body =
        r#"{"event_id":"0b9a3c52-4f5e-4c1e-9d7a-2f1e8b6c4d3a","user_id":"user-a","delta":10}"#;
    let addr = listen.clone();
    let (first, second) = tokio::task::spawn_blocking(move || {
        (
            http_request(&addr, "POST", "/v1/boards/weekly/scores", body),
            http_request(&addr, "POST", "/v1/boards/weekly/scores", body),
        )
    })
    .await
    .expect("client thread");
    assert_eq!(first.0, 201, "{}", first.1);
    assert_eq!(second.0, 200, "{}", second.1);
    let second: serde_json::Value = serde_json::from_str(&second.1).expect("JSON answer");
    assert_eq!(second["duplicate"], serde_json::json!(true));
    assert_eq!(second["score"], serde_json::json!(10));

    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM score_events), (SELECT count(*) FROM leaderboard_outbox),
                    (SELECT score FROM user_scores WHERE board_id = 'weekly' AND user_id = 'user-a')",
            &[],
        )
        .await
        .expect("counts");
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (1, 1, 10)
    );
    let status = api
        .terminate(Duration::from_secs(10))
        .expect("stops on SIGTERM");
    assert!(status.success(), "{}", api.stderr());
}

/// A settings file shared by the daemons, and the environment, may hold values the api would
/// not accept in the other daemons' sections (a rollback of one daemon, a typo in another's
/// section): the api reads only its own and the shared ones, and names what it ignored: an
/// unknown name with the closest one it knows, so that a typo stays loud, and another
/// daemon's section as that daemon's.
#[tokio::test]
async fn starts_with_an_invalid_value_in_another_daemons_section() {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    migrate(&db.url).await;
    let mut env = daemon_env(&db, &redis);
    env.extend(
        [
            // The daemon binds a port of its own choice and logs it.
            ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
            // Outside the projector's bounds and of the wrong type for the reconciler.
            ("LEDGERBOARD__PROJECTOR__BATCH_SIZE", "0"),
            ("LEDGERBOARD__RECONCILER__CHUNK_SIZE", "many"),
            // A setting this version does not know, in the api's own section.
            ("LEDGERBOARD__API__NEW_KNOB", "1"),
            // A typo of a setting it knows.
            ("LEDGERBOARD__API__MAX_LAG_M", "5"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let env = ledgerboard_testkit::env_refs(&env);
    let mut api = Process::start(BINARY, &[], &env);
    let listen = api
        .wait_for_addr("ledgerboard-api started", Duration::from_secs(20))
        .to_string();
    let stderr = api.stderr();
    for said in [
        "unknown setting api.new_knob (LEDGERBOARD__API__NEW_KNOB) ignored",
        "unknown setting api.max_lag_m (LEDGERBOARD__API__MAX_LAG_M) ignored: did you mean api.max_lag_ms (LEDGERBOARD__API__MAX_LAG_MS)?",
        "projector.* is ledgerboard-projector's section: ignored by ledgerboard-api",
        "reconciler.* is ledgerboard-reconciler's section: ignored by ledgerboard-api",
    ] {
        assert!(stderr.contains(said), "{said:?} not in {stderr}");
    }
    assert!(!stderr.contains("projector.batch_size"), "{stderr}");
    let addr = listen.clone();
    let (status, body) =
        tokio::task::spawn_blocking(move || http_request(&addr, "GET", "/v1/boards/b/top", ""))
            .await
            .expect("client thread");
    assert_eq!(status, 200, "{body}");
    let status = api
        .terminate(Duration::from_secs(10))
        .expect("stops on SIGTERM");
    assert!(status.success(), "{}", api.stderr());
}

/// The public port serves only the API: the probes and the metrics are on the admin port
/// (`api.admin_listen`), where a load balancer or a scraper on the public side cannot reach
/// them (and `/readyz` cannot be used to load the database).
#[tokio::test]
async fn probes_and_metrics_are_on_the_admin_port_only() {
    let db = TestDb::create().await;
    migrate(&db.url).await;
    let (mut api, public, admin) = common::api_process(&db, &[]);
    let (public, admin) = (public.to_string(), admin.to_string());
    assert_ne!(admin, public);
    let answers = tokio::task::spawn_blocking(move || {
        ["/metrics", "/healthz", "/readyz"].map(|path| {
            (
                path,
                http_request(&public, "GET", path, "").0,
                http_request(&admin, "GET", path, ""),
            )
        })
    })
    .await
    .expect("client thread");
    for (path, on_public, (on_admin, body)) in answers {
        assert_eq!(on_public, 404, "{path} on the public port");
        assert_eq!(on_admin, 200, "{path} on the admin port: {body}");
    }
    let status = api
        .terminate(Duration::from_secs(10))
        .expect("stops on SIGTERM");
    assert!(status.success(), "{}", api.stderr());
}
