//! A whole test environment: a database (migrated) and a Redis namespace of the test's own,
//! settings pointing at both, bulk seeding of the outbox, and both sides of the projection
//! read back for comparison (Redis through the same read as the chaos check's).
//!
//! The settings are the shared sections and `D`, the sections of the daemons the test runs
//! (each daemon test crate names its own, see `tests/common`). The test values below are set
//! by name, as the environment would, so each applies where `D` has its section.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{TestDb, TestRedis};
use ledgerboard_core::config::{DaemonSection, Settings, SharedOnly};
use ledgerboard_core::db::{Database, migrate};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::{Store, inspect, member};

pub struct TestEnv<D = SharedOnly> {
    pub db: TestDb,
    pub redis: TestRedis,
    pub settings: Settings<D>,
}

impl<D: DaemonSection> TestEnv<D> {
    pub async fn new(tweak: impl FnOnce(&mut Settings<D>)) -> TestEnv<D> {
        Self::with_redis_url(None, tweak).await
    }

    pub async fn with_redis_url(
        url: Option<String>,
        tweak: impl FnOnce(&mut Settings<D>),
    ) -> TestEnv<D> {
        let db = TestDb::create().await;
        let mut redis = TestRedis::new();
        // The namespace lives on the Redis the test uses: `keys()` and the clean-up must look
        // there, not at the shared server, where a private server's keys never are.
        if let Some(url) = url {
            redis.url = url;
        }
        // Faster polling and a shorter grace than a deployment's.
        let mut settings: Settings<D> = crate::settings_for(
            &db.url,
            &redis,
            &[
                ("LEDGERBOARD__PROJECTOR__POLL_INTERVAL_MS", "50"),
                ("LEDGERBOARD__SHUTDOWN__GRACE_MS", "2000"),
            ],
        );
        tweak(&mut settings);
        settings.validate().expect("the test's settings are valid");
        migrate(&settings.database).await.expect("migrate");
        TestEnv {
            db,
            redis,
            settings,
        }
    }
}

impl<D> TestEnv<D> {
    pub fn database(&self) -> Database {
        Database::connect(&self.settings.database, "projector-test").expect("pool")
    }

    pub fn store(&self) -> Store {
        Store::connect(&self.settings.redis).expect("redis pool")
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
                "SELECT user_id, score, version FROM user_scores WHERE board_id = $1 AND NOT hidden",
                &[&board],
            )
            .await
            .expect("source")
            .iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2))))
            .collect()
    }

    /// user → (score, version) in Redis, read by the one whole-board read the chaos check uses
    /// too (`projection::inspect::board_members`); a member missing from either key shows as -1
    /// there. Panics, naming Redis, on a score that is not an exact integer or a version that
    /// is not one: compared with [`Self::source`], such a member must fail, never round to
    /// the source's value.
    pub async fn projection(&self, board: &str) -> BTreeMap<String, (i64, i64)> {
        let store = self.store();
        let board = BoardId::parse(board).expect("board");
        let (_, members) = inspect::board_members(&store, &board)
            .await
            .unwrap_or_else(|e| panic!("reading board {board} from Redis: {e}"));
        members
            .into_iter()
            .map(|(user, seen)| {
                let score = seen.score.map_or(-1, |s| {
                    inspect::exact_score(s).unwrap_or_else(|| {
                        panic!("Redis holds score {s} for {user} on board {board}: not an integer")
                    })
                });
                let version = seen.version.as_deref().map_or(-1, |v| {
                    member::parse_stored(v).map(|(v, _)| v).unwrap_or_else(|| {
                        panic!(
                            "Redis holds version {v:?} for {user} on board {board}: not an integer"
                        )
                    })
                });
                (user, (score, version))
            })
            .collect()
    }

    /// Asserts that Redis holds `board` exactly as PostgreSQL does; the message names each
    /// side's store and lists the members that differ.
    pub async fn assert_projection_matches_source(&self, board: &str) {
        let (source, projection) = (self.source(board).await, self.projection(board).await);
        if source == projection {
            return;
        }
        let users: std::collections::BTreeSet<&String> =
            source.keys().chain(projection.keys()).collect();
        let differ: Vec<String> = users
            .into_iter()
            .filter(|u| source.get(*u) != projection.get(*u))
            .take(20)
            .map(|u| {
                format!(
                    "{u}: PostgreSQL {:?}, Redis {:?}",
                    source.get(u),
                    projection.get(u)
                )
            })
            .collect();
        panic!(
            "board {board}: Redis (projection, {} members) differs from PostgreSQL (source, {} members); (score, version) of the first members that differ:\n{}",
            projection.len(),
            source.len(),
            differ.join("\n")
        );
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ledgerboard_core::model::BoardId;

    use super::TestEnv;

    /// Writes `user`'s score and version straight into Redis.
    async fn redis_member(env: &TestEnv, user: &str, score: f64, version: i64) {
        let store = env.store();
        let board = BoardId::parse("b").expect("board");
        let mut conn = store.connection().await.expect("redis");
        redis::pipe()
            .cmd("ZADD")
            .arg(store.keys().scores(&board))
            .arg(score)
            .arg(user)
            .ignore()
            .cmd("HSET")
            .arg(store.keys().versions(&board))
            .arg(user)
            .arg(version)
            .ignore()
            .query_async::<()>(&mut conn)
            .await
            .expect("write the member");
    }

    /// A score with a fraction in Redis never reads as its source's integer: the read fails and
    /// names Redis. Broken once: with the former `s as i64`, Redis's 10.5 read as 10 and the
    /// comparison with PostgreSQL's 10 passed.
    #[tokio::test]
    async fn a_fractional_score_in_redis_fails_the_read_and_names_redis() {
        let env = Arc::new(TestEnv::new(|_| {}).await);
        env.db
            .client()
            .await
            .execute(
                "INSERT INTO user_scores (board_id, user_id, score, version) VALUES ('b', 'u1', 10, 1)",
                &[],
            )
            .await
            .expect("source row");
        redis_member(&env, "u1", 10.5, 1).await;
        let read = tokio::spawn({
            let env = env.clone();
            async move { env.projection("b").await }
        })
        .await;
        let panic = read.expect_err("a score of 10.5 must not read as an integer");
        let message = panic
            .into_panic()
            .downcast::<String>()
            .map(|m| *m)
            .unwrap_or_default();
        assert!(
            message.contains("Redis holds score 10.5 for u1"),
            "{message:?}"
        );

        // The same member at the source's exact score compares equal.
        redis_member(&env, "u1", 10.0, 1).await;
        env.assert_projection_matches_source("b").await;
    }
}
