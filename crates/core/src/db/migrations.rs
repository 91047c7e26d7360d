//! The schema's versioned SQL files (`migrations/` at the repository top), embedded in every
//! binary, applied by `lbctl migrate`, and checked by every daemon at start-up.

use std::time::Duration;

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
static VERSION: Statement<0> = Statement::new(
    Op::SchemaVersion,
    include_str!("sql/schema/version.sql"),
    [],
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
    /// None: no migration has ever been applied.
    pub applied: Option<i32>,
    pub known: i32,
}

impl SchemaCheck {
    /// A daemon runs only against exactly the schema it was built for.
    pub fn ensure_compatible(&self) -> Result<(), StoreError> {
        match self.applied {
            Some(v) if v == self.known => Ok(()),
            None => Err(StoreError::SchemaMismatch(format!(
                "the database has no ledgerboard schema (this binary needs version {}): run `lbctl migrate`",
                self.known
            ))),
            Some(v) if v < self.known => Err(StoreError::SchemaMismatch(format!(
                "the database schema is version {v}, older than version {} that this binary needs: run `lbctl migrate`",
                self.known
            ))),
            Some(v) => Err(StoreError::SchemaMismatch(format!(
                "the database schema is version {v}, newer than version {} that this binary knows: deploy the newer binary",
                self.known
            ))),
        }
    }
}

pub async fn check_schema(db: &super::Database) -> Result<SchemaCheck, StoreError> {
    let client = db.client().await?;
    let (_, applied) = db
        .bounded(Op::SchemaVersion, client, async |c| {
            applied_version(c).await
        })
        .await?;
    Ok(SchemaCheck {
        applied,
        known: known_schema_version(),
    })
}

/// The newest migration applied; None before the first `lbctl migrate`.
/// Unnamed statements (one round trip each, nothing left on the server), so this also works
/// through a transaction pooler; it runs once per start-up.
async fn applied_version(
    client: &tokio_postgres::Client,
) -> Result<Option<i32>, tokio_postgres::Error> {
    let exists: bool = client
        .query_typed_one(HISTORY_EXISTS.sql(), &[])
        .await?
        .try_get(0)?;
    if !exists {
        return Ok(None);
    }
    client.query_typed_one(VERSION.sql(), &[]).await?.try_get(0)
}

/// What `migrate` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrationReport {
    pub before: Option<i32>,
    pub after: i32,
    pub applied: Vec<String>,
}

/// Applies every migration not yet applied, each in its own transaction. Idempotent: a second
/// run applies nothing. Refuses a database whose schema is newer than this binary's, or whose
/// applied migrations differ from the embedded ones.
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
    let before = applied_version(client).await?;
    if let Some(v) = before.filter(|v| *v > known) {
        return Err(StoreError::SchemaMismatch(format!(
            "the database schema is version {v}, newer than version {known} that this lbctl knows: use the newer lbctl"
        )));
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
