//! One moderation command, run and printed: shared by `lbctl user` and `lbctl board
//! remove-entry`.

use anyhow::Context;
use ledgerboard_core::board::moderation::{self, Action, Command as ModerationCommand};
use ledgerboard_core::db::Database;

use crate::common::default_actor;

/// What every moderation command takes besides its target.
#[derive(clap::Args)]
pub struct ModerationArgs {
    /// Why (kept in the audit row): 1 to 512 characters.
    #[arg(long)]
    reason: String,
    /// The command's id (a UUID): the same id again is a repeat, answered without writing.
    /// A new one is made and printed when left out; give it back to retry safely.
    #[arg(long)]
    id: Option<uuid::Uuid>,
    /// Who acts, for the audit row (default: lbctl:$USER).
    #[arg(long)]
    actor: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs one moderation command and prints what it did; for an erasure, waits up to
/// `wait_secs` for the projector to take the user out of Redis and says whether it did.
pub async fn moderate(
    db: &Database,
    action: Action,
    args: ModerationArgs,
    wait_secs: u64,
) -> anyhow::Result<()> {
    let erased = match &action {
        Action::Erase { user } => Some(user.clone()),
        _ => None,
    };
    let cmd = ModerationCommand {
        action_id: args.id.unwrap_or_else(uuid::Uuid::new_v4),
        action,
        reason: args.reason,
        actor: args.actor.unwrap_or_else(default_actor),
    };
    let done = moderation::moderate(db, &cmd)
        .await
        .with_context(|| format!("{} (action id {})", cmd.action.name(), cmd.action_id))?;
    // The erasure's rows name the user until they are projected.
    let mut redis_pending = None;
    if let Some(user) = &erased {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(wait_secs);
        loop {
            let pending = moderation::erasure_pending(db, user).await?;
            if pending == 0 || std::time::Instant::now() >= deadline {
                redis_pending = Some(pending);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
    if args.json {
        let mut value = serde_json::json!({
            "action_id": done.action_id.to_string(),
            "action": done.action,
            "duplicate": done.duplicate,
            "at": done.at,
            "actor": done.actor,
            "result": done.result,
        });
        if let Some(pending) = redis_pending {
            value["redis_pending_boards"] = pending.into();
        }
        println!("{value}");
        return Ok(());
    }
    let r = &done.result;
    let again = if done.duplicate {
        " (a repeat of this id: nothing written now)"
    } else {
        ""
    };
    println!(
        "{} {}: action id {}, at {} by {}{again}",
        done.action,
        cmd.action.user(),
        done.action_id,
        done.at,
        done.actor
    );
    let boards = r["boards"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    println!("entries: {} (boards: {boards})", r["entries"]);
    if erased.is_some() {
        println!(
            "postgresql: {} entries, {} removal tombstones and {} ban removed; {} events, {} outbox rows and {} earlier audit rows pseudonymised (metadata removed)",
            r["entries"],
            r["removed_entries"],
            if r["ban"] == true { "the" } else { "no" },
            r["events"],
            r["outbox_rows"],
            r["audit_rows"]
        );
        if r["standings_rows"].as_i64().is_some_and(|n| n > 0) {
            println!(
                "postgresql: {} rows of closed periods' frozen standings pseudonymised, {} periods' digests re-sealed ({} found not matching before: `lbctl period verify` says they do not hold); `lbctl period verify` counts the rows as erased",
                r["standings_rows"], r["periods_resealed"], r["periods_mismatched"]
            );
        }
        match redis_pending {
            Some(0) => println!(
                "redis: every trace removed (member, version, metadata, tombstone) on the boards above"
            ),
            Some(n) => println!(
                "redis: {n} boards still wait for the projector (pending or parked outbox rows); run again with the same --id to check"
            ),
            None => {}
        }
    }
    Ok(())
}
