//! A whole test environment: a database (migrated) and a Redis namespace of the test's own,
//! settings pointing at both, bulk seeding of the outbox, and both sides of the projection
//! read back for comparison.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{TestDb, TestRedis};
use ledgerboard_core::cache::Cache;
use ledgerboard_core::config::Settings;
use ledgerboard_core::db::{Database, migrate};
use ledgerboard_core::domain::BoardId;

pub struct TestEnv {
    pub db: TestDb,
    pub redis: TestRedis,
    pub settings: Settings,
}

impl TestEnv {
    pub async fn new(tweak: impl FnOnce(&mut Settings)) -> TestEnv {
        Self::with_redis_url(None, tweak).await
    }

    pub async fn with_redis_url(url: Option<String>, tweak: impl FnOnce(&mut Settings)) -> TestEnv {
        let db = TestDb::create().await;
        let mut redis = TestRedis::new();
        // The namespace lives on the Redis the test uses: `keys()` and the clean-up must look
        // there, not at the shared server, where a private server's keys never are.
        if let Some(url) = url {
            redis.url = url;
        }
        let mut settings: Settings = crate::settings_for(&db.url, &redis);
        settings.projector.poll_interval_ms = 50;
        settings.shutdown.grace_ms = 2_000;
        tweak(&mut settings);
        settings.validate().expect("the test's settings are valid");
        migrate(&settings.database).await.expect("migrate");
        TestEnv {
            db,
            redis,
            settings,
        }
    }

    pub fn database(&self) -> Database {
        Database::connect(&self.settings.database, "projector-test").expect("pool")
    }

    pub fn cache(&self) -> Cache {
        Cache::connect(&self.settings.redis).expect("redis pool")
    }

    /// See [`crate::seed_outbox`].
    pub async fn seed(&self, board: &str, users: i64, rows: i64) {
        crate::seed_outbox(&self.db.client().await, board, users, rows).await;
    }

    /// user → (score, version) in PostgreSQL.
    pub async fn source(&self, board: &str) -> BTreeMap<String, (i64, i64)> {
        let client = self.db.client().await;
        client
            .query(
                "SELECT user_id, score, version FROM user_scores WHERE board_id = $1",
                &[&board],
            )
            .await
            .expect("source")
            .iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2))))
            .collect()
    }

    /// user → (score, version) in Redis; a member missing from either key shows as -1.
    pub async fn projection(&self, board: &str) -> BTreeMap<String, (i64, i64)> {
        let cache = self.cache();
        let keys = cache.keys().clone();
        let board = BoardId::parse(board).expect("board");
        let mut conn = cache.connection().await.expect("redis");
        let scores: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(keys.scores(&board))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await
            .expect("ZRANGE");
        let versions: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(keys.versions(&board))
            .query_async(&mut conn)
            .await
            .expect("HGETALL");
        let mut out: BTreeMap<String, (i64, i64)> = scores
            .into_iter()
            .map(|(u, s)| {
                let v = versions.get(&u).copied().unwrap_or(-1);
                (u, (s as i64, v))
            })
            .collect();
        for (u, v) in versions {
            out.entry(u).or_insert((-1, v));
        }
        out
    }

    /// (pending, parked, published) outbox rows.
    pub async fn outbox_counts(&self) -> (i64, i64, i64) {
        let client = self.db.client().await;
        let r = client
            .query_one(
                "SELECT count(*) FILTER (WHERE published_at IS NULL AND parked_at IS NULL),
                        count(*) FILTER (WHERE published_at IS NULL AND parked_at IS NOT NULL),
                        count(*) FILTER (WHERE published_at IS NOT NULL)
                 FROM leaderboard_outbox",
                &[],
            )
            .await
            .expect("outbox counts");
        (r.get(0), r.get(1), r.get(2))
    }

    /// Marks every pending outbox row of `board` published without projecting it: the state of
    /// a Redis that lost what was projected into it. The reconciler then finds those members
    /// drifted (missing or stale), where a pending row would make them lagging.
    pub async fn mark_published(&self, board: &str) {
        self.db
            .client()
            .await
            .execute(
                "UPDATE leaderboard_outbox SET published_at = now()
                 WHERE board_id = $1 AND published_at IS NULL",
                &[&board],
            )
            .await
            .expect("mark published");
    }

    /// Parks the pending outbox rows of one member, as the projector does after its last
    /// allowed attempt; returns how many.
    pub async fn park(&self, board: &str, user: &str) -> u64 {
        self.db
            .client()
            .await
            .execute(
                "UPDATE leaderboard_outbox SET parked_at = now(), last_error = 'parked by a test'
                 WHERE board_id = $1 AND user_id = $2
                   AND published_at IS NULL AND parked_at IS NULL",
                &[&board, &user],
            )
            .await
            .expect("park")
    }

    /// Waits until nothing is pending (parked rows aside), for at most `limit`.
    pub async fn wait_drained(&self, limit: Duration) -> bool {
        crate::wait_until(limit, || async { self.outbox_counts().await.0 == 0 })
            .await
            .is_some()
    }
}
