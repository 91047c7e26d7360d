//! The settings of the daemons the benchmarks run in this process: the api and the projector
//! (the reconciler runs as its own binary), each handed its own sections (`Holds`) of the
//! testkit's `Stack`.

use ledgerboard_core::db::migrate;
use ledgerboard_testkit::{TestDb, TestRedis};

pub type Settings = ledgerboard_testkit::stack::StackSettings;

/// A database (migrated) and a Redis namespace of the run's own, and the default settings
/// pointed at both: the benchmarks measure the defaults, so unlike the tests' `TestEnv` nothing
/// else is changed. Keep the database and the namespace as long as the run uses them.
pub async fn fresh() -> anyhow::Result<(TestDb, TestRedis, Settings)> {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    let mut settings = Settings::default();
    settings.database.url = db.url.as_str().into();
    settings.redis.namespace = redis.namespace.clone();
    migrate(&settings.database).await?;
    Ok((db, redis, settings))
}

/// The environment that points a daemon binary (`lbctl`, `ledgerboard-reconciler`,
/// `ledgerboard-api`) at the run's database and Redis namespace, logging warnings only.
pub fn daemon_env(settings: &Settings) -> Vec<(&'static str, String)> {
    let redis = &settings.redis;
    vec![
        (
            "LEDGERBOARD__DATABASE__URL",
            settings.database.url.as_str().to_owned(),
        ),
        ("LEDGERBOARD__REDIS__URL", redis.url.as_str().to_owned()),
        ("LEDGERBOARD__REDIS__CLUSTER", redis.cluster.to_string()),
        ("LEDGERBOARD__REDIS__NAMESPACE", redis.namespace.clone()),
        ("LEDGERBOARD__LOG__FILTER", "warn".to_owned()),
    ]
}
