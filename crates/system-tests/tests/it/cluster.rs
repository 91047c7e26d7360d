//! The three daemons in cluster mode (`LEDGERBOARD__REDIS__CLUSTER=true`) on a Redis Cluster of
//! the test's own (3 masters, 3 replicas): commands and reads on many boards while a replica
//! takes over its master and a busy board's slot moves to another master. The projector alone
//! must bring every board to PostgreSQL's state (no row parked), one reconcile pass must find
//! nothing left to repair, and the boards' keys must be spread over all three masters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use ledgerboard_core::config::RedisSettings;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::cluster_slot;
use ledgerboard_harness::RedisCluster;
use ledgerboard_testkit::{
    Process, TestDb, TestRedis, daemon_env, http_request, migrate, source_boards, wait_until,
    wait_until_blocking, workspace_binary,
};

const BOARDS: u32 = 24;
const USERS: u32 = 40;
/// Accepted commands between one disturbance and the next.
const PHASE: u64 = 400;

fn board(i: u32) -> String {
    format!("season-{i}")
}

/// A deterministic skew: board 0 takes a third of the traffic.
fn pick_board(n: u64) -> u32 {
    if n.is_multiple_of(3) {
        0
    } else {
        (n / 3 % u64::from(BOARDS)) as u32
    }
}

struct Stack {
    db: TestDb,
    env: Vec<(String, String)>,
    api: String,
    redis: RedisSettings,
}

impl Stack {
    fn start(&self, name: &str, args: &[&str]) -> Process {
        let env = ledgerboard_harness::env_refs(&self.env);
        Process::start(&workspace_binary(name).to_string_lossy(), args, &env)
    }

    fn daemon(&self, name: &str) -> Process {
        self.daemon_with(name, &[])
    }

    fn daemon_with(&self, name: &str, extra: &[(&str, &str)]) -> Process {
        let mut env = ledgerboard_harness::env_refs(&self.env);
        env.extend_from_slice(extra);
        Process::start_ready(&workspace_binary(name).to_string_lossy(), &[], &env)
    }
}

async fn outbox_unpublished(db: &TestDb) -> (i64, i64) {
    let row = db
        .client()
        .await
        .query_one(
            "SELECT count(*) FILTER (WHERE parked_at IS NULL), count(*) FILTER (WHERE parked_at IS NOT NULL)
             FROM leaderboard_outbox WHERE published_at IS NULL",
            &[],
        )
        .await
        .expect("outbox");
    (row.get(0), row.get(1))
}

/// user → (score, version) of every board, read back through the cluster.
async fn projection(store: &Store) -> BTreeMap<String, BTreeMap<String, (i64, i64)>> {
    let mut conn = store.connection().await.expect("cluster connection");
    let mut boards = BTreeMap::new();
    for i in 0..BOARDS {
        let id = BoardId::parse(&board(i)).expect("board");
        // One pipeline per board: one slot.
        let (scores, versions): (Vec<(String, f64)>, BTreeMap<String, i64>) = redis::pipe()
            .cmd("ZRANGE")
            .arg(store.keys().scores(&id))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .cmd("HGETALL")
            .arg(store.keys().versions(&id))
            .query_async(&mut conn)
            .await
            .expect("read a board");
        let members: BTreeMap<String, (i64, i64)> = scores
            .into_iter()
            .map(|(u, s)| {
                let v = versions.get(&u).copied().unwrap_or(-1);
                (u, (s as i64, v))
            })
            .collect();
        if !members.is_empty() {
            boards.insert(board(i), members);
        }
    }
    boards
}

fn differing_boards(
    a: &BTreeMap<String, BTreeMap<String, (i64, i64)>>,
    b: &BTreeMap<String, BTreeMap<String, (i64, i64)>>,
) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .cloned()
        .collect()
}

fn total_members(boards: &BTreeMap<String, BTreeMap<String, (i64, i64)>>) -> u64 {
    boards.values().map(|b| b.len() as u64).sum()
}

/// A number of a log line, written `name=N` (text) or `"name":N` (JSON).
fn field(line: &str, name: &str) -> Option<u64> {
    [format!("{name}="), format!("\"{name}\":")]
        .iter()
        .find_map(|prefix| {
            let at = line.find(prefix.as_str())? + prefix.len();
            let digits: String = line[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
}

fn wait_for(accepted: &AtomicU64, at_least: u64) {
    wait_until_blocking(Duration::from_secs(60), || {
        accepted.load(Ordering::Relaxed) >= at_least
    })
    .unwrap_or_else(|| {
        panic!(
            "the load stalled at {} commands",
            accepted.load(Ordering::Relaxed)
        )
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemons_keep_the_contract_on_a_cluster_through_failover_and_slot_migration() {
    let cluster = RedisCluster::start().expect("a local Redis Cluster");
    let db = TestDb::create().await;
    migrate(&db.url).await;
    // Only its namespace is used: every key goes to the private cluster.
    let namespace = TestRedis::new().namespace.clone();
    let seeds = cluster.seeds().join(",");
    let mut env = daemon_env(&db, &TestRedis::new());
    env.retain(|(k, _)| k != "LEDGERBOARD__REDIS__URL" && k != "LEDGERBOARD__REDIS__NAMESPACE");
    for (k, v) in [
        ("LEDGERBOARD__REDIS__URL", seeds.as_str()),
        ("LEDGERBOARD__REDIS__NAMESPACE", namespace.as_str()),
        ("LEDGERBOARD__REDIS__CLUSTER", "true"),
        // A port of the api's own choice, read from its log (no port found free and bound
        // again later).
        ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
        ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "0"),
        ("LEDGERBOARD__PROJECTOR__POLL_INTERVAL_MS", "50"),
        ("LEDGERBOARD__PROJECTOR__BATCH_SIZE", "100"),
        ("LEDGERBOARD__PROJECTOR__WORKERS", "2"),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    let redis = RedisSettings {
        url: seeds.into(),
        cluster: true,
        namespace,
        ..RedisSettings::default()
    };
    let mut stack = Stack {
        db,
        env,
        api: String::new(),
        redis,
    };

    let mut api = stack.daemon("ledgerboard-api");
    stack.api = api
        .wait_for_addr("ledgerboard-api started", Duration::from_secs(20))
        .to_string();
    let projectors = [
        stack.daemon("ledgerboard-projector"),
        stack.daemon("ledgerboard-projector"),
    ];
    // The reconciler daemon only for the rebuild requests: each new board is sealed by its
    // first rebuild before bounded reads trust its projection. Its passes are an hour apart,
    // so the comparison below still comes before any reconciliation pass.
    // Its admin server takes any free port (`daemon_env`): nothing here scrapes it.
    let reconciler = stack.daemon_with(
        "ledgerboard-reconciler",
        &[("LEDGERBOARD__RECONCILER__INTERVAL_MS", "3600000")],
    );

    // Load: commands on every board (board 0 hot), each followed by a bounded read of its
    // board's top, from 4 threads until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let from_projection = Arc::new(AtomicU64::new(0));
    let load: Vec<_> = (0..4u64)
        .map(|thread| {
            let (stop, accepted, from_projection, addr) = (
                stop.clone(),
                accepted.clone(),
                from_projection.clone(),
                stack.api.clone(),
            );
            std::thread::spawn(move || {
                let mut n = thread;
                while !stop.load(Ordering::Relaxed) {
                    let b = board(pick_board(n));
                    let body = format!(
                        r#"{{"event_id":"{}","user_id":"u{}","delta":{}}}"#,
                        uuid::Uuid::new_v4(),
                        n % u64::from(USERS),
                        n % 7 + 1
                    );
                    let (status, reply) =
                        http_request(&addr, "POST", &format!("/v1/boards/{b}/scores"), &body);
                    assert_eq!(status, 201, "{reply}");
                    accepted.fetch_add(1, Ordering::Relaxed);
                    let (status, page) =
                        http_request(&addr, "GET", &format!("/v1/boards/{b}/top?limit=10"), "");
                    assert_eq!(status, 200, "a bounded read must answer: {page}");
                    if page.contains(r#""source":"projection""#) {
                        from_projection.fetch_add(1, Ordering::Relaxed);
                    }
                    n += 4;
                }
            })
        })
        .collect();

    wait_for(&accepted, PHASE);
    let promoted = cluster.failover().expect("failover");
    wait_for(&accepted, accepted.load(Ordering::Relaxed) + PHASE);
    let hot_slot = cluster_slot(
        &ledgerboard_core::projection::KeyLayout::new(&stack.redis.namespace)
            .scores(&BoardId::parse(&board(0)).expect("board")),
    );
    cluster.migrate_slot(hot_slot).expect("slot migration");
    wait_for(&accepted, accepted.load(Ordering::Relaxed) + PHASE);
    stop.store(true, Ordering::Relaxed);
    for thread in load {
        thread.join().expect("load thread");
    }
    let total = accepted.load(Ordering::Relaxed);

    // The projectors drain the outbox, through the failover and the migration, parking nothing.
    let pending = &std::sync::atomic::AtomicI64::new(-1);
    wait_until(Duration::from_secs(60), || async {
        let (now, parked) = outbox_unpublished(&stack.db).await;
        assert_eq!(parked, 0, "rows were parked by cluster events");
        pending.store(now, Ordering::Relaxed);
        now == 0
    })
    .await
    .unwrap_or_else(|| {
        panic!(
            "{} rows still pending: {}",
            pending.load(Ordering::Relaxed),
            projectors[0].stderr()
        )
    });
    let store = Store::connect(&stack.redis).expect("cluster client");
    let expected = source_boards(&stack.db.client().await).await;
    assert_eq!(expected.len(), BOARDS as usize);
    let projected = projection(&store).await;
    assert!(
        differing_boards(&expected, &projected).is_empty(),
        "boards the projector left unlike PostgreSQL: {:?}",
        differing_boards(&expected, &projected)
    );

    // One reconcile pass, as the deployed daemon runs it: nothing to repair, all equal. The
    // daemon may hold the lock for a requested rebuild at that moment, and "lock not acquired"
    // is a normal outcome for `--once` (it says so and exits 1): then it is run again.
    let mut attempts = 0;
    let once = loop {
        attempts += 1;
        let mut once = stack.start("ledgerboard-reconciler", &["--once"]);
        let status = once.wait_for_exit(Duration::from_secs(60));
        let busy = once.stderr().contains("another reconciler holds the lock");
        if busy && attempts < 20 {
            let log = reconciler.stderr();
            let serving: Vec<&str> = log.lines().filter(|l| l.contains("rebuil")).collect();
            eprintln!(
                "--once found the lock taken; the daemon's last rebuild lines: {:?}",
                &serving[serving.len().saturating_sub(3)..]
            );
            std::thread::sleep(Duration::from_millis(500));
            continue;
        }
        assert!(
            status.is_some_and(|s| s.success()),
            "reconcile pass (attempt {attempts}): {status:?} {}\nthe reconciler daemon: {}",
            once.stderr(),
            reconciler.stderr()
        );
        break once;
    };
    eprintln!("reconcile pass: attempt {attempts}");
    let log = once.stderr();
    let line = log
        .lines()
        .rfind(|l| l.contains("reconciliation pass"))
        .unwrap_or_else(|| panic!("no pass report: {log}"));
    assert_eq!(field(line, "boards"), Some(u64::from(BOARDS)), "{line}");
    assert_eq!(
        field(line, "checked"),
        Some(total_members(&expected)),
        "{line}"
    );
    assert_eq!(field(line, "repaired"), Some(0), "{line}");
    assert!(
        differing_boards(&expected, &projection(&store).await).is_empty(),
        "unequal after the reconcile pass"
    );

    // The boards are spread over all three masters (each a shard of its own).
    let per_primary = store
        .on_each_primary(redis::cmd("DBSIZE"))
        .await
        .expect("DBSIZE on each primary");
    assert_eq!(per_primary.len(), 3, "{per_primary:?}");
    for (node, keys) in &per_primary {
        let keys: i64 = redis::from_redis_value(keys.clone()).expect("a count");
        assert!(keys > 0, "master {node} holds no board");
    }
    assert!(
        cluster
            .topology()
            .expect("topology")
            .iter()
            .any(|n| n.port == promoted && n.master),
        "the failover did not stick"
    );
    assert!(
        from_projection.load(Ordering::Relaxed) > 0,
        "no read was answered from the cluster"
    );
    eprintln!(
        "{total} commands; {} reads from the projection",
        from_projection.load(Ordering::Relaxed)
    );

    for mut p in projectors.into_iter().chain([api, reconciler]) {
        let status = p.terminate(Duration::from_secs(15));
        assert!(status.is_some_and(|s| s.success()), "{}", p.stderr());
    }
}
