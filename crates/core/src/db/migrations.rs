//! The schema's versioned SQL files (`migrations/` at the repository top), embedded in every
//! binary, applied by `lbctl migrate`, and checked by every daemon at start-up.
//!
//! A binary runs against the schema it was built for (N, its newest embedded migration) and
//! against the next release's (N+1: exactly one applied migration newer than N), so that pods
//! of the previous release keep starting during a rolling upgrade and after a rollback. That
//! only holds because every migration is written to be safe for the release before it
//! (expand now, contract a release later: docs/operations.md, "Rolling upgrades and
//! rollbacks").

use std::time::Duration;

use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Op, Statement};
use crate::config::DatabaseSettings;

mod embedded {
    refinery::embed_migrations!("../../migrations");
}

// Both unnamed (one round trip each, nothing left on the server), so that the check also works
// through a transaction pooler; it runs once per start-up, timed as one `schema_version` call.
static HISTORY_EXISTS: Statement<0> = Statement::new(
    Op::SchemaVersion,
    include_str!("sql/schema/history_exists.sql"),
    [],
)
.unnamed();
static VERSION: Statement<1> = Statement::new(
    Op::SchemaVersion,
    include_str!("sql/schema/version.sql"),
    [Type::INT4],
)
.unnamed();

/// Key of the session advisory lock that serializes concurrent `lbctl migrate` runs. Taken on
/// a direct connection of its own (never through a transaction pooler) for the run's length.
const MIGRATION_LOCK_KEY: i64 = 0x6c62_6d69_6772; // "lbmigr"
/// How long a second `lbctl migrate` waits for the first one.
const MIGRATION_LOCK_WAIT: Duration = Duration::from_secs(120);

/// The newest schema version this binary knows.
pub fn known_schema_version() -> i32 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| m.version())
        .max()
        .unwrap_or(0)
}

/// The schema a database holds, against the one this binary knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SchemaCheck {
    /// The newest applied migration; None: no migration has ever been applied.
    pub applied: Option<i32>,
    /// The newest migration this binary embeds (N).
    pub known: i32,
    /// How many applied migrations are newer than `known`: 0 (this release's schema), 1 (the
    /// next release's, N+1) or more (a release this binary cannot run against).
    pub ahead: u32,
}

/// Why a daemon may run against the schema it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compatibility {
    /// The schema this binary was built for.
    Current,
    /// One migration ahead: this binary runs as the previous release, during a rolling
    /// upgrade or after a rollback.
    OneAhead,
}

impl SchemaCheck {
    /// A daemon runs against the schema it was built for (N) and the next release's (N+1);
    /// it refuses an older one (`lbctl migrate` first) and one two or more migrations ahead
    /// (the newer binary must be deployed).
    pub fn ensure_compatible(&self) -> Result<Compatibility, StoreError> {
        match (self.applied, self.ahead) {
            (None, _) => Err(StoreError::SchemaMismatch(format!(
                "the database has no ledgerboard schema (this binary needs version {}): run `lbctl migrate`",
                self.known
            ))),
            (Some(v), 0) if v < self.known => Err(StoreError::SchemaMismatch(format!(
                "the database schema is version {v}, older than version {} that this binary needs: run `lbctl migrate`",
                self.known
            ))),
            (Some(_), 0) => Ok(Compatibility::Current),
            (Some(_), 1) => Ok(Compatibility::OneAhead),
            (Some(v), ahead) => Err(StoreError::SchemaMismatch(format!(
                "the database schema is version {v}, {ahead} migrations newer than version {} that this binary knows \
                 (a binary runs against its own schema and the next release's only): deploy the newer binary",
                self.known
            ))),
        }
    }

    /// One sentence for the start-up log and `lbctl status`: the version found, and why this
    /// binary does or does not run against it.
    pub fn describe(&self) -> String {
        let known = self.known;
        match (self.applied, self.ensure_compatible()) {
            (None, _) => {
                format!("no schema applied (this binary's is version {known}): run `lbctl migrate`")
            }
            (Some(v), Ok(Compatibility::Current)) => {
                format!("schema version {v}, the one this binary was built for")
            }
            (Some(v), Ok(Compatibility::OneAhead)) => format!(
                "schema version {v}, one migration ahead of this binary's {known}: running as the previous release (rolling upgrade or rollback)"
            ),
            (Some(v), Err(_)) if self.ahead == 0 => {
                format!("schema version {v}, older than this binary's {known}: run `lbctl migrate`")
            }
            (Some(v), Err(_)) => format!(
                "schema version {v}, {} migrations ahead of this binary's {known}: deploy the newer binary",
                self.ahead
            ),
        }
    }
}

pub async fn check_schema(db: &super::Database) -> Result<SchemaCheck, StoreError> {
    let client = db.client().await?;
    let known = known_schema_version();
    let (_, applied) = db
        .bounded(Op::SchemaVersion, client, async |c| {
            applied_version(c, known).await
        })
        .await?;
    Ok(schema_check(applied, known))
}

fn schema_check(applied: Option<(i32, u32)>, known: i32) -> SchemaCheck {
    SchemaCheck {
        applied: applied.map(|(v, _)| v),
        known,
        ahead: applied.map_or(0, |(_, ahead)| ahead),
    }
}

/// The newest migration applied and how many applied ones are newer than `known`; None
/// before the first `lbctl migrate`. Unnamed statements (one round trip each, nothing left on
/// the server), so this also works through a transaction pooler; it runs once per start-up.
async fn applied_version(
    client: &tokio_postgres::Client,
    known: i32,
) -> Result<Option<(i32, u32)>, tokio_postgres::Error> {
    let exists: bool = client
        .query_typed_one(HISTORY_EXISTS.sql(), &[])
        .await?
        .try_get(0)?;
    if !exists {
        return Ok(None);
    }
    let row = client
        .query_typed_one(VERSION.sql(), &[(&known, Type::INT4)])
        .await?;
    let newest: Option<i32> = row.try_get(0)?;
    let ahead: i32 = row.try_get(1)?;
    // An empty history table (created, nothing recorded) is no schema either.
    Ok(newest.map(|v| (v, u32::try_from(ahead).unwrap_or(0))))
}

/// What `migrate` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrationReport {
    pub before: Option<i32>,
    pub after: i32,
    pub applied: Vec<String>,
}

/// Applies every migration not yet applied, each in its own transaction. Idempotent: a second
/// run applies nothing. A database one migration ahead (the next release migrated it, and
/// this is a rollback) is left as it is; one two or more ahead, or whose applied migrations
/// differ from the embedded ones, is refused.
pub async fn migrate(settings: &DatabaseSettings) -> Result<MigrationReport, StoreError> {
    let super::tls::ConnectParams {
        config: mut pg,
        tls,
        ..
    } = super::tls::connect_params(settings, settings.session_url())?;
    pg.connect_timeout(settings.connect_timeout())
        .application_name("lbctl-migrate");
    let (mut client, connection) = pg.connect(tls).await?;
    let conn_task = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "migration connection ended with an error");
        }
    });
    let result = migrate_on(&mut client).await;
    drop(client);
    let _ = conn_task.await;
    result
}

async fn migrate_on(client: &mut tokio_postgres::Client) -> Result<MigrationReport, StoreError> {
    // Migrations may legitimately run long (index builds); the lock wait may not.
    client
        .batch_execute(&format!(
            "SET statement_timeout = 0; SET lock_timeout = '{}ms'",
            MIGRATION_LOCK_WAIT.as_millis()
        ))
        .await?;
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK_KEY])
        .await?;
    client.batch_execute("SET lock_timeout = 0").await?;

    let runner = embedded::migrations::runner()
        .set_abort_divergent(true)
        .set_abort_missing(true);
    let known = known_schema_version();
    let found = applied_version(client, known).await?;
    let before = found.map(|(v, _)| v);
    match schema_check(found, known).ahead {
        0 => {}
        // The previous release's lbctl after a rollback: the schema stays (rollbacks never
        // undo a migration) and refinery would refuse the migration it does not embed.
        // (The lock goes with the session, which ends when `migrate` returns.)
        1 => {
            return Ok(MigrationReport {
                before,
                after: before.unwrap_or(known),
                applied: Vec::new(),
            });
        }
        ahead => {
            let v = before.unwrap_or(known);
            return Err(StoreError::SchemaMismatch(format!(
                "the database schema is version {v}, {ahead} migrations newer than version {known} that this lbctl knows: use the newer lbctl"
            )));
        }
    }
    let report = runner
        .run_async(client)
        .await
        .map_err(|e| StoreError::Internal(format!("migration failed: {}", error_chain(&e))))?;
    client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK_KEY])
        .await?;
    Ok(MigrationReport {
        before,
        after: known,
        applied: report
            .applied_migrations()
            .iter()
            .map(|m| format!("V{}__{}", m.version(), m.name()))
            .collect(),
    })
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut msg = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        msg.push_str(": ");
        match cause.downcast_ref::<tokio_postgres::Error>() {
            Some(pg) => msg.push_str(&super::errors::describe(pg)),
            None => msg.push_str(&cause.to_string()),
        }
        source = cause.source();
    }
    msg
}
