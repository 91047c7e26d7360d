//! `lbctl rebuild --board B`: the online rebuild of one board's Redis projection.

use std::path::Path;

use anyhow::Context;
use ledgerboard_core::daemon;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_reconciler::rebuild::Verify;
use ledgerboard_reconciler::settings::Sections as ReconcilerSections;

use crate::common;

/// The reconciler's rebuild, with the reconciler's settings (its lock and chunk size).
pub async fn run(
    config_file: Option<&Path>,
    board: &str,
    wait_secs: u64,
    verify: bool,
) -> anyhow::Result<()> {
    let settings = &daemon::load_daemon_settings::<ReconcilerSections>(config_file)?;
    // A board, or one period of a board that resets (`weekly~20261130T000000Z`).
    let board = BoardId::parse_stored(board).context("--board")?;
    let db = common::database(&settings.database).await?;
    let store = Store::connect(&settings.redis).context("redis.url")?;
    let report = ledgerboard_reconciler::rebuild::rebuild(
        &db,
        &store,
        settings,
        &board,
        std::time::Duration::from_secs(wait_secs),
        if verify { Verify::Pass } else { Verify::No },
    )
    .await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    db.close();
    anyhow::ensure!(
        report.verify.as_ref().is_none_or(|pass| pass.completed),
        "the rebuild switched, but its verifying pass did not complete: run the reconciler"
    );
    Ok(())
}
