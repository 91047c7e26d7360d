//! A rebuild's chunk write (`projection::generation::Build::write_chunk`,
//! `lua/rebuild_chunk.lua`) and the pass's observation (`projection::inspect::observe`,
//! `lua/observe.lua`) against the real Redis: both read and write whole chunks with bulk
//! commands, so these check every kind of member a chunk can meet, in a chunk larger than one
//! bulk call takes.

use std::collections::{BTreeMap, BTreeSet};

use ledgerboard_core::config::RedisSettings;
use ledgerboard_core::db::source::SourceRow;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::generation::Build;
use ledgerboard_core::projection::{Store, inspect, member};
use ledgerboard_testkit::TestRedis;
use redis::AsyncCommands;

/// More rows than Lua's unpack takes at once (about 8,000 arguments): the bulk calls must slice.
const FRESH: usize = 5_000;

fn store(redis: &TestRedis) -> Store {
    Store::connect(&RedisSettings {
        url: redis.url.as_str().into(),
        namespace: redis.namespace.clone(),
        ..RedisSettings::default()
    })
    .expect("pool")
}

fn row(user: &str, score: i64, version: i64, tie: i64, metadata: Option<&str>) -> SourceRow {
    SourceRow {
        user_id: user.to_owned(),
        score,
        version,
        key: tie.into(),
        metadata: metadata.map(str::to_owned),
    }
}

#[tokio::test]
async fn a_chunk_writes_absent_members_in_bulk_and_present_ones_by_their_versions() {
    let redis = TestRedis::new();
    let store = store(&redis);
    let board = BoardId::parse("weekly").expect("board id");
    let keys = store.keys();
    let (z, v, d, x) = (
        keys.rebuild_scores(&board),
        keys.rebuild_versions(&board),
        keys.rebuild_distinct(&board),
        keys.rebuild_metadata(&board),
    );
    // A board read with dense ranks: the build keeps its distinct scores.
    ledgerboard_core::projection::generation::want_distinct(&store, &board)
        .await
        .expect("mark dense");
    let mut build = Build::begin(&store, &board, 60_000).await.expect("begin");
    let mut conn = store.connection().await.expect("connection");

    // What the projector (or a hand) left in the new generation before this chunk came.
    let _: () = redis::pipe()
        // A newer version, written by the projector's double write: kept.
        .hset(&v, "u-newer", "9")
        .zadd(&z, "u-newer", 900)
        .zadd(&d, "900", 900)
        // An older version: replaced, and its score leaves the distinct scores.
        .hset(&v, "u-older", "1")
        .zadd(&z, "u-older", 111)
        .zadd(&d, "111", 111)
        // A member with no version (edited by hand): replaced, its score leaves too.
        .zadd(&z, "u-bare", 333)
        .zadd(&d, "333", 333)
        // Hidden by a newer version since the chunk was read: not written.
        .hset(keys.tombstones(&board), "u-hidden", "5")
        // As the projector marks the build's seal when it writes there (project.lua): the
        // chunk looks its users' versions up only then.
        .hset(keys.rebuild_meta(&board), "touched", 3)
        .query_async(&mut conn)
        .await
        .expect("seed the generation");

    let mut rows = vec![
        row("u-newer", 5, 3, 0, None),
        row("u-older", 222, 2, 0, Some(r#"{"a":1}"#)),
        row("u-bare", 444, 1, 0, None),
        row("u-hidden", 555, 4, 0, None),
        row("u-tied", 666, 7, 42, Some(r#"{"t":true}"#)),
    ];
    for i in 0..FRESH {
        let metadata = (i % 2 == 0).then(|| format!(r#"{{"i":{i}}}"#));
        // Scores repeat (the distinct scores hold each once), and none is one of the above.
        rows.push(row(
            &format!("f{i:05}"),
            1_000 + (i % 700) as i64,
            1,
            0,
            metadata.as_deref(),
        ));
    }
    let written = build.write_chunk(rows.iter()).await.expect("write chunk");
    assert_eq!(
        written,
        FRESH as i64 + 3,
        "older, bare, tied and the fresh rows"
    );

    // Expected: every source row but u-newer (kept at 900) and u-hidden (absent).
    let mut scores: BTreeMap<String, f64> = BTreeMap::new();
    let mut versions: BTreeMap<String, String> = BTreeMap::new();
    let mut metadata: BTreeMap<String, String> = BTreeMap::new();
    scores.insert("u-newer".into(), 900.0);
    versions.insert("u-newer".into(), "9".into());
    for r in rows
        .iter()
        .filter(|r| r.user_id != "u-newer" && r.user_id != "u-hidden")
    {
        scores.insert(member::member(&r.user_id, r.key), r.score as f64);
        versions.insert(r.user_id.clone(), member::stored(r.version, r.key));
        if let Some(m) = &r.metadata {
            metadata.insert(r.user_id.clone(), m.clone());
        }
    }
    let distinct: BTreeSet<String> = scores.values().map(|s| format!("{s}")).collect();

    let got_scores: Vec<(String, f64)> = conn.zrange_withscores(&z, 0, -1).await.expect("z");
    let got_versions: BTreeMap<String, String> = conn.hgetall(&v).await.expect("v");
    let got_metadata: BTreeMap<String, String> = conn.hgetall(&x).await.expect("x");
    let got_distinct: Vec<String> = conn.zrange(&d, 0, -1).await.expect("d");
    assert_eq!(
        got_scores.into_iter().collect::<BTreeMap<_, _>>(),
        scores,
        "members and scores"
    );
    assert_eq!(got_versions, versions, "versions");
    assert_eq!(got_metadata, metadata, "metadata");
    assert_eq!(
        got_distinct.into_iter().collect::<BTreeSet<_>>(),
        distinct,
        "distinct scores: each score a member holds, and no other"
    );

    // The pass's observation reads the same generation back once switched live.
    let unlinked = build.switch(&store, None).await.expect("switch");
    unlinked.expect("unlink the retired generation");
    let users: Vec<&str> = rows.iter().map(|r| r.user_id.as_str()).collect();
    let observed = inspect::observe(&store, &board, users.iter().copied())
        .await
        .expect("observe");
    assert_eq!(observed.len(), rows.len());
    for (r, seen) in rows.iter().zip(&observed) {
        let user = r.user_id.as_str();
        let expected_score = scores.get(&member::member(user, r.key)).copied();
        assert_eq!(
            seen.version.as_deref(),
            versions.get(user).map(String::as_str),
            "{user}"
        );
        assert_eq!(seen.score, expected_score, "{user}");
        assert_eq!(
            seen.metadata.as_deref(),
            metadata.get(user).map(String::as_str),
            "{user}"
        );
    }
}

/// A version the projector wrote to the new generation while it is built (its double write,
/// `lua/project.lua`) is never replaced by an older one that a chunk read from PostgreSQL
/// before that version committed: the projector marks the build's seal (`touched`), and from
/// then on each chunk looks its users' versions up. Fails if project.lua does not mark the
/// seal: the chunk then goes in as one bulk write over alice's version 7.
#[tokio::test]
async fn a_chunk_read_before_a_projected_row_never_replaces_its_newer_version() {
    use ledgerboard_core::model::{EventId, ProjectionEntry, UserId};
    let redis = TestRedis::new();
    let store = store(&redis);
    let board = BoardId::parse("weekly").expect("board id");
    let keys = store.keys();
    let mut build = Build::begin(&store, &board, 60_000).await.expect("begin");
    let projected = ProjectionEntry {
        outbox_id: 0,
        event_id: EventId::parse(&uuid::Uuid::new_v4().to_string()).expect("event"),
        board: board.clone(),
        user_id: UserId::parse("alice").expect("user"),
        score: 700,
        version: 7,
        key: Default::default(),
        metadata: None,
        change: Default::default(),
    };
    let outcomes = ledgerboard_core::projection::apply_batch(
        &store,
        &[projected],
        std::time::Duration::from_secs(60),
    )
    .await
    .expect("the projector's batch");
    assert_eq!(outcomes.len(), 1);
    // The chunk read alice at version 6, before version 7 committed; bob is new.
    let chunk = [row("alice", 600, 6, 0, None), row("bob", 500, 2, 0, None)];
    let written = build.write_chunk(chunk.iter()).await.expect("chunk");
    assert_eq!(written, 1, "only bob is written");
    let mut conn = store.connection().await.expect("connection");
    let versions: BTreeMap<String, String> = conn
        .hgetall(keys.rebuild_versions(&board))
        .await
        .expect("versions");
    let scores: Vec<(String, f64)> = conn
        .zrange_withscores(keys.rebuild_scores(&board), 0, -1)
        .await
        .expect("scores");
    assert_eq!(
        versions,
        BTreeMap::from([("alice".into(), "7".into()), ("bob".into(), "2".into())])
    );
    assert_eq!(
        scores,
        vec![("bob".to_owned(), 500.0), ("alice".to_owned(), 700.0)]
    );
}
