//! The harness's Redis Cluster: it forms, a replica takes over, a slot moves with its keys,
//! and a cluster client still reads every key afterwards (following MOVED and ASK).

use ledgerboard_harness::RedisCluster;
use redis::Commands;
use redis::cluster::ClusterClient;

#[test]
fn a_cluster_fails_over_and_moves_a_slot_without_losing_keys() {
    let _alone = crate::one_at_a_time();
    let cluster = RedisCluster::start().expect("cluster");
    let topology = cluster.topology().expect("topology");
    assert_eq!(
        topology.iter().filter(|n| n.master).count(),
        3,
        "{topology:?}"
    );
    assert_eq!(topology.len(), 6, "{topology:?}");
    let served: u32 = topology
        .iter()
        .flat_map(|n| n.slots.iter())
        .map(|&(a, b)| u32::from(b - a) + 1)
        .sum();
    assert_eq!(served, 16_384);

    let client = ClusterClient::new(cluster.seeds()).expect("client");
    let mut conn = client.get_connection().expect("connection");
    for board in 0..4 {
        for user in 0..50 {
            let () = conn
                .zadd(format!("t:lb:{{b{board}}}:z"), format!("u{user}"), user)
                .expect("zadd");
        }
    }
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("t:lb:{b1}:z")
        .query(&mut conn)
        .expect("keyslot");
    let before = cluster.topology().expect("topology");

    cluster.migrate_slot(slot).expect("migrate");
    let after = cluster.topology().expect("topology");
    let owner = |t: &[ledgerboard_harness::NodeInfo]| {
        t.iter()
            .find(|n| n.master && n.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
            .map(|n| n.id.clone())
    };
    assert_ne!(owner(&before), owner(&after), "the slot did not move");

    let promoted = cluster.failover().expect("failover");
    assert!(
        cluster
            .topology()
            .expect("topology")
            .iter()
            .any(|n| n.port == promoted && n.master)
    );

    for board in 0..4 {
        let members: Vec<String> = conn
            .zrange(format!("t:lb:{{b{board}}}:z"), 0, -1)
            .expect("zrange after the moves");
        assert_eq!(members.len(), 50, "board {board}");
    }
}
