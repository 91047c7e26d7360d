//! What the subcommands share: the database with a schema this lbctl runs against, and who
//! acts when `--actor` is left out.

use ledgerboard_core::config::DatabaseSettings;
use ledgerboard_core::db::{self, Database};

/// The database, once its schema is one this lbctl's statements run against.
pub async fn database(settings: &DatabaseSettings) -> anyhow::Result<Database> {
    let db = Database::connect(settings, "lbctl")?;
    db::check_schema(&db).await?.ensure_compatible()?;
    Ok(db)
}

/// Who acts when --actor is left out: lbctl and the operating system's user.
pub fn default_actor() -> String {
    format!(
        "lbctl:{}",
        std::env::var("USER").unwrap_or_else(|_| "unknown".into())
    )
}
