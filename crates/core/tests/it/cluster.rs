//! The shared Redis connection in cluster mode, against a Redis Cluster of the test's own:
//! a projection batch spanning many slots, a member read (MULTI/EXEC) after its slot moved, a
//! batch after a failover, and the per-node commands operators' tools use.

use ledgerboard_core::board::definition::{Order, Sort, TieBreak};
use ledgerboard_core::config::RedisSettings;
use ledgerboard_core::model::{BoardId, EventId, ProjectionEntry, UserId};
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::cluster_slot;
use ledgerboard_core::projection::read;
use ledgerboard_core::projection::{RowOutcome, apply_batch};
use ledgerboard_core::ranking::RankMode;
use ledgerboard_harness::RedisCluster;
use std::time::Duration;

/// The boards here are undeclared: descending, ties by user id.
const ORDER: Order = Order::of(Sort::Descending, TieBreak::UserId);

const BOARDS: usize = 40;

fn entries(version: i64) -> Vec<ProjectionEntry> {
    (0..BOARDS)
        .flat_map(|b| {
            (0..3).map(move |u| ProjectionEntry {
                outbox_id: 0,
                event_id: EventId::parse(&uuid::Uuid::new_v4().to_string()).expect("event"),
                board: BoardId::parse(&format!("b{b}")).expect("board"),
                user_id: UserId::parse(&format!("u{u}")).expect("user"),
                score: 100 * version + u,
                version,
                key: Default::default(),
                metadata: None,
                change: Default::default(),
            })
        })
        .collect()
}

#[tokio::test]
async fn cluster_mode_survives_slot_moves_and_failover() {
    let cluster = RedisCluster::start().expect("a local Redis Cluster");
    let settings = RedisSettings {
        url: cluster.seeds().join(",").into(),
        cluster: true,
        namespace: "clustertest".into(),
        ..RedisSettings::default()
    };
    settings_are_valid(&settings);
    let store = Store::connect(&settings).expect("cluster client");
    let ttl = Duration::from_secs(60);

    // One batch over 40 boards: 40 slots on 3 masters, split and sent per slot.
    let batch = entries(1);
    let slots: std::collections::BTreeSet<u16> = batch
        .iter()
        .map(|e| cluster_slot(&store.keys().scores(&e.board)))
        .collect();
    assert!(slots.len() > 30, "{slots:?}");
    let outcomes = apply_batch(&store, &batch, ttl).await.expect("batch");
    assert!(
        outcomes.iter().all(|o| *o == RowOutcome::Applied),
        "{outcomes:?}"
    );
    // The same batch again: every row a duplicate, in order.
    let again = apply_batch(&store, &batch, ttl).await.expect("batch again");
    assert!(
        again.iter().all(|o| *o == RowOutcome::Duplicate),
        "{again:?}"
    );

    // A member read is one script call; after its slot moves, the first try is answered
    // MOVED (and the new node may not hold the script yet) and the read must still answer.
    let board = BoardId::parse("b7").expect("board");
    let user = UserId::parse("u2").expect("user");
    let before = read::member(&store, &board, ORDER, RankMode::Ordinal, &user)
        .await
        .expect("member read")
        .value
        .0
        .expect("the member");
    cluster
        .migrate_slot(cluster_slot(&store.keys().scores(&board)))
        .expect("slot migration");
    let after = read::member(&store, &board, ORDER, RankMode::Ordinal, &user)
        .await
        .expect("member read after the slot moved")
        .value
        .0
        .expect("the member after the slot moved");
    assert_eq!(after, before);
    assert_eq!(
        (after.entry.score, after.version, after.entry.rank),
        (102, 1, 1)
    );

    // A replica takes over; newer versions still apply everywhere, older ones are refused.
    // The client may send a slot's pipeline twice across the failover (its first reply lost
    // with the demoted master's connection): the rows it applied then answer Duplicate, which
    // the projector publishes like Applied.
    cluster.failover().expect("failover");
    let newer = apply_batch(&store, &entries(2), ttl)
        .await
        .expect("after failover");
    assert!(
        newer
            .iter()
            .all(|o| matches!(o, RowOutcome::Applied | RowOutcome::Duplicate)),
        "{newer:?}"
    );
    let older = apply_batch(&store, &entries(1), ttl)
        .await
        .expect("stale batch");
    assert!(older.iter().all(|o| *o == RowOutcome::Stale), "{older:?}");
    for b in 0..BOARDS {
        let board = BoardId::parse(&format!("b{b}")).expect("board");
        let top = read::top(&store, &board, ORDER, RankMode::Ordinal, 0, 10)
            .await
            .expect("top");
        let scores: Vec<(i64, u64)> = top
            .value
            .entries
            .iter()
            .map(|e| (e.score, e.rank))
            .collect();
        assert_eq!(scores, vec![(202, 1), (201, 2), (200, 3)], "board b{b}");
    }

    // Per-node commands: every master answers, and SCAN on each finds every board's keys.
    let masters = store
        .on_each_primary(redis::cmd("PING"))
        .await
        .expect("PING each master");
    assert_eq!(masters.len(), 3, "{masters:?}");
    let keys = store
        .scan_keys(&format!("{}:lb:*:z", store.keys().namespace()))
        .await
        .expect("scan");
    assert_eq!(keys.len(), BOARDS, "{keys:?}");
}

fn settings_are_valid(redis: &RedisSettings) {
    let settings: ledgerboard_core::config::Settings = ledgerboard_core::config::Settings {
        redis: redis.clone(),
        ..Default::default()
    };
    settings.validate().expect("cluster settings are valid");
    let mut single = settings.clone();
    single.redis.cluster = false;
    assert!(
        single.validate().is_err(),
        "a list of seeds without cluster mode must be refused"
    );
}
