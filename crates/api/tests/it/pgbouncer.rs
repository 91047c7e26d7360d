//! The api and the projector behind PgBouncer in transaction pooling mode: 8 pooled client
//! connections share 2 server sessions, so any session state (a named prepared statement, a
//! start-up option, a session lock) would break. LISTEN and migrations use
//! `database.direct_url`.

use crate::common;

use common::Settings;
use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use ledgerboard_api::{AppState, router};
use ledgerboard_core::config::Count;
use ledgerboard_core::db::{Database, migrate};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_projector::Projector;
use ledgerboard_testkit::{PgBouncer, TestDb, TestRedis, test_tokens, wait_until};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use common::send;

fn command(board: &str, user: u32, delta: i64) -> Request<Body> {
    common::command(
        board,
        json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": format!("u{user}"), "delta": delta})
            .to_string(),
    )
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).expect("request")
}

/// (user → (score, version)) of a board, from PostgreSQL.
async fn source(db: &TestDb, board: &str) -> BTreeMap<String, (i64, i64)> {
    let rows = db
        .client()
        .await
        .query(
            "SELECT user_id, score, version FROM user_scores WHERE board_id = $1",
            &[&board],
        )
        .await
        .expect("source");
    rows.iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect()
}

/// The same from the projection.
async fn projection(store: &Store, board: &str) -> BTreeMap<String, (i64, i64)> {
    let board = BoardId::parse(board).expect("board");
    let mut conn = store.connection().await.expect("redis");
    let scores: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(store.keys().scores(&board))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .expect("zrange");
    let versions: BTreeMap<String, i64> = redis::cmd("HGETALL")
        .arg(store.keys().versions(&board))
        .query_async(&mut conn)
        .await
        .expect("hgetall");
    scores
        .into_iter()
        .map(|(u, s)| {
            let v = versions.get(&u).copied().unwrap_or(-1);
            (u, (s as i64, v))
        })
        .collect()
}

fn database_for_rebuild(settings: &Settings) -> Database {
    Database::connect(&settings.database, "pgbouncer-rebuild").expect("pool")
}

#[tokio::test]
async fn commands_reads_and_projection_work_through_a_transaction_pooler() {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    let bouncer = PgBouncer::start(2);
    let mut settings = Settings::default();
    settings.database.url = bouncer.url(&db.name).into();
    settings.database.direct_url = db.url.as_str().into();
    settings.database.transaction_pooler = true;
    settings.database.pool_max_size = Count::of(8);
    settings.redis.url = redis.url.as_str().into();
    settings.redis.namespace = redis.namespace.clone();
    settings.auth.tokens = test_tokens().into();
    settings.projector.batch_size = Count::of(50);
    settings.validate().expect("valid settings");
    // Through direct_url: the migration lock is a session lock.
    migrate(&settings.database).await.expect("migrate");

    let database = Database::connect(&settings.database, "pgbouncer-test").expect("pool");
    let store = Store::connect(&settings.redis).expect("redis pool");
    let app = router(
        AppState::new(database, store.clone(), &settings),
        &settings.api,
    );

    let cancel = CancellationToken::new();
    let projector = Projector::new(
        settings.clone(),
        Database::connect(&settings.database, "pgbouncer-projector").expect("pool"),
        store.clone(),
    );
    let projecting = tokio::spawn(projector.run(cancel.clone()));

    // 400 commands, 16 at a time, over two boards.
    let mut tasks = Vec::new();
    for worker in 0..16u32 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            for i in (worker..400).step_by(16) {
                let board = if i % 2 == 0 { "even" } else { "odd" };
                let (status, body) = send(&app, command(board, i % 37, i64::from(i % 9) + 1)).await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("commands");
    }

    // The projector drains through the pooler, woken through its direct LISTEN session.
    for board in ["even", "odd"] {
        let projected = wait_until(Duration::from_secs(30), || async {
            projection(&store, board).await == source(&db, board).await
        })
        .await;
        assert!(
            projected.is_some(),
            "{board} was not projected through PgBouncer: {}",
            bouncer.log()
        );
        let expected = source(&db, board).await;
        assert_eq!(expected.len(), 37, "{board}: {expected:?}");
    }

    // A board is trusted by bounded reads once a rebuild sealed it (as the reconciler does for
    // every board): the rebuild reads the source through the pooler too.
    ledgerboard_reconciler::rebuild::rebuild(
        &database_for_rebuild(&settings),
        &store,
        &settings,
        &BoardId::parse("even").expect("board"),
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::No,
    )
    .await
    .expect("rebuild through the pooler");

    // Reads from PostgreSQL (strong) and from the projection (bounded) agree, through the
    // pooler. Each answer says where it came from: two reads of PostgreSQL would agree too.
    let (status, strong) = send(&app, get("/v1/boards/even/top?limit=5&consistency=strong")).await;
    assert_eq!(status, StatusCode::OK, "{strong}");
    assert_eq!(strong["freshness"]["source"], "database", "{strong}");
    let (status, bounded) = send(&app, get("/v1/boards/even/top?limit=5")).await;
    assert_eq!(status, StatusCode::OK, "{bounded}");
    assert_eq!(bounded["freshness"]["source"], "projection", "{bounded}");
    assert_eq!(strong["entries"].as_array().map(Vec::len), Some(5));
    assert_eq!(strong["entries"], bounded["entries"]);
    let top = strong["entries"][0]["user_id"]
        .as_str()
        .expect("a top user")
        .to_owned();
    let (status, around) = send(
        &app,
        get(&format!(
            "/v1/boards/even/users/{top}/around?radius=2&consistency=strong"
        )),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{around}");
    assert_eq!(around["entries"][0]["user_id"], top.as_str());

    cancel.cancel();
    projecting.await.expect("projector stops");

    // The same pool without `transaction_pooler` cannot work here: PgBouncer refuses the
    // start-up options that carry the session's timeouts.
    let mut plain = settings.database.clone();
    plain.transaction_pooler = false;
    let unaware = Database::connect(&plain, "pgbouncer-unaware").expect("pool");
    let refused = match unaware.client().await {
        Ok(_) => panic!("a session with start-up options got through a transaction pooler"),
        Err(e) => e.to_string(),
    };
    // PgBouncer's own words for it, not any failure (a wrong port would fail too).
    assert!(
        refused.contains("unsupported startup parameter"),
        "refused for another reason: {refused}"
    );
}
