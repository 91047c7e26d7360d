//! The read model's Redis pool (`projection::Store`) against the real Redis, and against one
//! that never answers.

use std::time::{Duration, Instant};

use ledgerboard_core::config::{Millis, RedisSettings};
use ledgerboard_core::projection::Store;
use ledgerboard_testkit::{BlackHole, TestRedis};

#[tokio::test]
async fn pool_reaches_redis_within_its_namespace() {
    let redis = TestRedis::new();
    let settings = RedisSettings {
        url: redis.url.as_str().into(),
        namespace: redis.namespace.clone(),
        ..RedisSettings::default()
    };
    let store = Store::connect(&settings).expect("pool");
    store.ping().await.expect("PING");
    let mut conn = store.connection().await.expect("connection");
    let key = format!("{}:probe", store.keys().namespace());
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg("1")
        .query_async(&mut conn)
        .await
        .expect("SET");
    assert_eq!(redis.keys(), vec![key]);
}

#[tokio::test]
async fn a_silent_redis_fails_within_the_timeouts() {
    let hole = BlackHole::start();
    let settings = RedisSettings {
        url: format!("redis://{}", hole.addr()).into(),
        connect_timeout_ms: Millis::of(300),
        response_timeout_ms: Millis::of(300),
        ..RedisSettings::default()
    };
    let store = Store::connect(&settings).expect("pool");
    let started = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(10), store.ping())
        .await
        .expect("no hang past 10 s");
    assert!(result.is_err(), "a black hole cannot answer PING");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
