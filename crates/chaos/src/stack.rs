//! A run's own ledgerboard: a fresh database on the configured PostgreSQL server, a Redis
//! namespace of its own, and the daemons as processes (the binaries next to `lbchaos`). The
//! experiment and the chaos run use it, then [`Stack::cleanup`] drops the database and
//! deletes the namespace's keys.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use ledgerboard_core::config::{DatabaseSettings, RedisSettings, Settings, parse_postgres_url};
use ledgerboard_core::db::{self, Database};
use ledgerboard_core::model::{BoardId, Key};
use ledgerboard_core::projection::Seal;
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::inspect::{self, Observed};
use ledgerboard_harness::{Daemon, binary_beside_current_exe};
use tokio_postgres::NoTls;

pub const API: &str = "ledgerboard-api";
pub const PROJECTOR: &str = "ledgerboard-projector";
pub const RECONCILER: &str = "ledgerboard-reconciler";

const BOARD_SCORES: &str = include_str!("sql/board_scores.sql");

/// A member as PostgreSQL or Redis holds it: (score, version).
pub type Members = BTreeMap<String, (i64, i64)>;
/// A member with its place among equal scores: (score, version, key). The key holds the
/// board's column count, its other columns in order-key form (`model::Columns::key`; 0 past
/// the board's columns) and the tie, 0 on boards whose ties go by user id
/// (`definition::Order`); in Redis it is the one the versions hash stores (`member::stored`),
/// which names the member's spelling in the sorted set. The whole key is compared: a member
/// spelt with another column value or tie stands elsewhere among equal scores.
pub type Placed = BTreeMap<String, (i64, i64, Key)>;

/// What a member that Redis holds unreadably (a score, version or key that is not one the
/// projection writes) is compared as: never equal to a row.
pub const UNREADABLE: Key = Key {
    columns: 0,
    rest: [i64::MIN; 2],
    tie: i64::MIN,
};

pub struct Stack {
    pub db_name: String,
    /// `Authorization` header value of the run's own token (scope `admin`).
    pub bearer: String,
    /// The HS256 secret of the run's player key (`auth.player_keys`, kid `chaos`).
    pub player_secret: String,
    admin: tokio_postgres::Config,
    pub db: Database,
    pub store: Store,
    /// The address the api bound, once [`Stack::start_api`] has read it from its log.
    api_addr: std::sync::Mutex<Option<SocketAddr>>,
    env: Vec<(String, String)>,
}

impl Stack {
    /// Creates the database `<purpose>_<random>` next to the configured one (the configured
    /// role needs CREATEDB), applies the schema, and prepares the daemons' environment.
    pub async fn create(
        settings: &Settings,
        purpose: &str,
        redis_url: &str,
        extra_env: &[(&str, &str)],
    ) -> anyhow::Result<Stack> {
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..10];
        let db_name = format!("{purpose}_{suffix}");
        let mut admin = parse_postgres_url(&settings.database.url)?;
        admin
            .dbname("postgres")
            .connect_timeout(Duration::from_secs(5));
        let (client, conn) = admin
            .connect(NoTls)
            .await
            .context("connecting to PostgreSQL's `postgres` database to create the run's own")?;
        tokio::spawn(conn);
        client
            .simple_query(&format!("CREATE DATABASE \"{db_name}\""))
            .await
            .with_context(|| format!("CREATE DATABASE {db_name} (the role needs CREATEDB)"))?;
        let mut url = url::Url::parse(&settings.database.url).context("database.url")?;
        url.set_path(&format!("/{db_name}"));
        let database = DatabaseSettings {
            url: url.as_str().into(),
            ..settings.database.clone()
        };
        if let Err(e) = db::migrate(&database).await {
            // Nothing else knows this database: drop it rather than leave it behind.
            let _ = client
                .simple_query(&format!(
                    "DROP DATABASE IF EXISTS \"{db_name}\" WITH (FORCE)"
                ))
                .await;
            return Err(anyhow::Error::from(e).context("migrating the run's database"));
        }
        let db = Database::connect(&database, "lbchaos")?;
        let namespace = format!("{purpose}-{suffix}");
        let store = Store::connect(&RedisSettings {
            url: redis_url.into(),
            namespace: namespace.clone(),
            ..settings.redis.clone()
        })?;
        // A token that exists for this run only, and a player key (HS256) likewise.
        let token = uuid::Uuid::new_v4().simple().to_string();
        let player_secret = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let player_keys = format!("chaos=HS256:{player_secret}");
        let tokens = format!(
            "lbchaos-run={}@admin",
            ledgerboard_core::auth::hash_token(&token)
        );
        let mut env: Vec<(String, String)> = [
            ("LEDGERBOARD__DATABASE__URL", database.url.as_str()),
            ("LEDGERBOARD__REDIS__URL", redis_url),
            ("LEDGERBOARD__REDIS__NAMESPACE", namespace.as_str()),
            // Every daemon binds a port of its own choice and logs it (`start_api`,
            // `admin_addr` read it): a port found free here and bound later by the daemon
            // could be taken by another process in between.
            ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
            ("LEDGERBOARD__API__ADMIN_LISTEN", "127.0.0.1:0"),
            ("LEDGERBOARD__PROJECTOR__ADMIN_LISTEN", "127.0.0.1:0"),
            ("LEDGERBOARD__RECONCILER__ADMIN_LISTEN", "127.0.0.1:0"),
            ("LEDGERBOARD__PROJECTOR__POLL_INTERVAL_MS", "100"),
            ("LEDGERBOARD__SHUTDOWN__GRACE_MS", "2000"),
            // The run's clients talk to the api directly: no load balancer to drain from.
            ("LEDGERBOARD__API__DRAIN_DELAY_MS", "0"),
            ("LEDGERBOARD__DATABASE__STARTUP_TIMEOUT_MS", "10000"),
            ("LEDGERBOARD__AUTH__TOKENS", tokens.as_str()),
            ("LEDGERBOARD__AUTH__PLAYER_KEYS", player_keys.as_str()),
            ("LEDGERBOARD__API__PLAYER_RATE_LIMIT_PER_MIN", "0"),
            // Every client of the run comes from one address.
            ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "0"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        env.extend(
            extra_env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        Ok(Stack {
            db_name,
            bearer: format!("Bearer {token}"),
            player_secret,
            admin,
            db,
            store,
            api_addr: std::sync::Mutex::new(None),
            env,
        })
    }

    fn binary(name: &str) -> anyhow::Result<PathBuf> {
        Ok(binary_beside_current_exe(name)?)
    }

    fn env_with<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut env = ledgerboard_harness::env_refs(&self.env);
        env.extend_from_slice(extra);
        env
    }

    /// Starts a daemon and waits (up to 30 s) until it logs that it started.
    pub fn start(&self, name: &str, extra_env: &[(&str, &str)]) -> anyhow::Result<Daemon> {
        let env = self.env_with(extra_env);
        Ok(Daemon::start_ready(
            &Self::binary(name)?,
            &[],
            &env,
            Duration::from_secs(30),
        )?)
    }

    /// Starts the api as [`Stack::start`] does and records the address it bound, which
    /// [`Stack::api_addr`] gives from then on.
    pub fn start_api(&self) -> anyhow::Result<Daemon> {
        let env = self.env_with(&[]);
        let mut api = Daemon::start(&Self::binary(API)?, &[], &env)?;
        let addr = api.wait_for_addr(&format!("{API} started"), Duration::from_secs(30))?;
        *self
            .api_addr
            .lock()
            .map_err(|_| anyhow::anyhow!("api address lock poisoned"))? = Some(addr);
        Ok(api)
    }

    /// The address of the api [`Stack::start_api`] started last; an error before that.
    pub fn api_addr(&self) -> anyhow::Result<SocketAddr> {
        self.api_addr
            .lock()
            .map_err(|_| anyhow::anyhow!("api address lock poisoned"))?
            .context("the api has not been started (Stack::start_api)")
    }

    /// Runs `ledgerboard-reconciler --once <args>` to its end (at most 120 s) and returns its
    /// JSON report.
    /// A lock left by a reconciler that stopped mid-pass expires by itself
    /// (`reconciler.lock_ttl_ms`, 30 s by default): until then the pass is retried.
    pub async fn reconcile_once(&self, args: &[&str]) -> anyhow::Result<serde_json::Value> {
        let started = std::time::Instant::now();
        loop {
            match self.reconcile_once_now(args).await {
                Err(e)
                    if e.to_string().contains("another reconciler holds the lock")
                        && started.elapsed() < Duration::from_secs(40) =>
                {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                outcome => return outcome,
            }
        }
    }

    async fn reconcile_once_now(&self, args: &[&str]) -> anyhow::Result<serde_json::Value> {
        let mut command = tokio::process::Command::new(Self::binary(RECONCILER)?);
        command.arg("--once").args(args).kill_on_drop(true);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("LEDGERBOARD") {
                command.env_remove(key);
            }
        }
        command.envs(self.env_with(&[]));
        let output = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .context("ledgerboard-reconciler --once ran for more than 120 s")??;
        anyhow::ensure!(
            output.status.success(),
            "ledgerboard-reconciler --once failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).context("reading the reconciler's JSON report")
    }

    /// The board as PostgreSQL holds it: its visible entries (a banned user's are hidden), which
    /// the projection and every read must hold.
    pub async fn source(&self, board: &BoardId) -> anyhow::Result<Members> {
        Ok(without_ties(self.placed_source(board).await?))
    }

    /// The board's visible entries as PostgreSQL holds them, with each member's key (column
    /// count, other columns, tie).
    pub async fn placed_source(&self, board: &BoardId) -> anyhow::Result<Placed> {
        let client = self.db.client().await?;
        let (_, rows) = self
            .db
            .bounded(ledgerboard_core::db::Op::BoardScores, client, async |c| {
                c.query(BOARD_SCORES, &[&board.as_str()]).await
            })
            .await?;
        rows.iter()
            .map(|r| {
                // A count outside 1..=3 cannot be stored (a CHECK); one that could not be read
                // as a u8 would compare unequal to any Redis key.
                let columns: i16 = r.try_get(4)?;
                let key = Key {
                    columns: u8::try_from(columns).unwrap_or(0),
                    rest: [r.try_get(5)?, r.try_get(6)?],
                    tie: r.try_get(3)?,
                };
                Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, key)))
            })
            .collect()
    }

    /// The board as the Redis projection holds it; a member whose score or version is not
    /// an integer shows as `i64::MIN`, so that it never equals the source.
    pub async fn projection(&self, board: &BoardId) -> anyhow::Result<Members> {
        Ok(without_ties(self.sealed_projection(board).await?.1))
    }

    /// The board's seal and its projection, read in one MULTI/EXEC so that no rebuild's
    /// switch or projector write falls between them (`projection::inspect::board_members`,
    /// the tests' read too): the seal says whether these very keys are whole.
    /// Each member carries the key (column count, other columns, tie) its stored value names
    /// ([`UNREADABLE`] when that value is not one `member::stored` writes).
    pub async fn sealed_projection(&self, board: &BoardId) -> anyhow::Result<(Seal, Placed)> {
        let (seal, stored) = inspect::board_members(&self.store, board).await?;
        Ok((seal, members(stored)))
    }

    /// Drops the database and deletes the namespace's keys. Call it after stopping the
    /// daemons.
    pub async fn cleanup(self) -> anyhow::Result<()> {
        let pattern = self.store.keys().all_keys_pattern();
        let deleted = self.store.unlink_matching(&pattern).await;
        self.db.close();
        let (client, conn) = self.admin.connect(NoTls).await?;
        tokio::spawn(conn);
        client
            .simple_query(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.db_name
            ))
            .await
            .with_context(|| format!("DROP DATABASE {}", self.db_name))?;
        deleted
            .map(|_| ())
            .with_context(|| format!("deleting the keys {pattern}"))
    }
}

/// Members as the projection stores them; a score or version that is not an integer, or
/// missing, shows as `i64::MIN`, and a key that does not parse as [`UNREADABLE`] (all three do
/// for a member with no score), so that it never equals the source.
fn members(stored: BTreeMap<String, Observed>) -> Placed {
    stored
        .into_iter()
        .map(|(user, seen)| {
            let member = match seen.score {
                None => (i64::MIN, i64::MIN, UNREADABLE),
                Some(score) => {
                    let (version, key) = seen.stored().unwrap_or((i64::MIN, UNREADABLE));
                    (
                        inspect::exact_score(score).unwrap_or(i64::MIN),
                        version,
                        key,
                    )
                }
            };
            (user, member)
        })
        .collect()
}

fn without_ties(placed: Placed) -> Members {
    placed
        .into_iter()
        .map(|(user, (score, version, _))| (user, (score, version)))
        .collect()
}
