//! `lbctl status [--json]`: the schema version and the outbox.

use anyhow::Context;
use ledgerboard_core::config::Settings;
use ledgerboard_core::db::{self, Database};

pub async fn run(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let db = Database::connect(&settings.database, "lbctl")?;
    let schema = db::check_schema(&db)
        .await
        .context("reading the schema version")?;
    let outbox = if schema.applied.is_some() {
        Some(db::outbox_status(&db).await.context("reading the outbox")?)
    } else {
        None
    };
    if json {
        let value = serde_json::json!({ "schema": schema, "outbox": outbox });
        println!("{value}");
    } else {
        match schema.applied {
            Some(v) if v == schema.known => {
                println!("schema:  version {v} (this lbctl knows {})", schema.known)
            }
            // Why this release's daemons do or do not run against it.
            Some(v) => println!(
                "schema:  version {v} (this lbctl knows {}): {}",
                schema.known,
                schema.describe()
            ),
            None => println!("schema:  none applied (run `lbctl migrate`)"),
        }
        if let Some(o) = outbox {
            let age = o
                .oldest_pending_age_ms
                .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
            println!(
                "outbox:  {} pending, {} parked, oldest pending {age}",
                o.pending, o.parked
            );
        }
    }
    db.close();
    Ok(())
}
