//! The settings of the daemons the benchmarks run in this process: the api and the projector
//! (the reconciler runs as its own binary), each handed its own sections (`Holds`).

use ledgerboard_api::settings::{ApiSettings, AuthSettings};
use ledgerboard_core::config::{self, ConfigError, DaemonSection, Holds};
use ledgerboard_core::db::migrate;
use ledgerboard_projector::settings::ProjectorSettings;
use ledgerboard_testkit::{TestDb, TestRedis};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stack {
    pub api: ApiSettings,
    pub auth: AuthSettings,
    pub projector: ProjectorSettings,
}

pub type Settings = config::Settings<Stack>;

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

impl DaemonSection for Stack {
    fn validate(settings: &Settings) -> Result<(), ConfigError> {
        settings
            .narrow::<ledgerboard_api::settings::Sections>()
            .validate()?;
        settings
            .narrow::<ledgerboard_projector::settings::Sections>()
            .validate()
    }
}

impl Holds<ledgerboard_api::settings::Sections> for Stack {
    fn section(&self) -> ledgerboard_api::settings::Sections {
        ledgerboard_api::settings::Sections {
            api: self.api.clone(),
            auth: self.auth.clone(),
        }
    }
}

impl Holds<ledgerboard_projector::settings::Sections> for Stack {
    fn section(&self) -> ledgerboard_projector::settings::Sections {
        ledgerboard_projector::settings::Sections {
            projector: self.projector.clone(),
        }
    }
}
