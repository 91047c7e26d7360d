//! `lbctl migrate`: apply the schema migrations this lbctl carries.

use anyhow::Context;
use ledgerboard_core::config::Settings;
use ledgerboard_core::db;

pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    let report = db::migrate(&settings.database)
        .await
        .context("lbctl migrate")?;
    let known = db::known_schema_version();
    if report.after > known {
        println!(
            "schema is at version {}, one migration ahead of this lbctl's {known}: nothing to apply (the next release migrated it; a rollback keeps it)",
            report.after
        );
    } else if report.applied.is_empty() {
        println!("schema is up to date at version {}", report.after);
    } else {
        for name in &report.applied {
            println!("applied {name}");
        }
        println!("schema is now at version {}", report.after);
    }
    Ok(())
}
