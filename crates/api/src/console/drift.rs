//! The drift history (`/console/drift`) and each board's last reconcile result: what the
//! reconciler's passes recorded (`db::history`, V11), in words.

use std::collections::HashMap;

use axum::extract::State;
use axum::response::Response;
use ledgerboard_core::db::history;
use serde_json::Value;

use super::guard::ConsoleQuery;
use super::pages::{Notice, chrome, utc};
use super::session::Session;
use super::unanswered;
use super::views::{DriftPage, ListedBoard, PassRow};
use super::{ConsoleError, render};
use crate::state::AppState;

const PASSES_SHOWN: i64 = 50;

pub async fn drift(
    State(state): State<AppState>,
    session: Session,
    ConsoleQuery(q): ConsoleQuery<Notice>,
) -> Result<Response, ConsoleError> {
    let namespace = state.store.keys().namespace();
    let passes = history::passes(&state.read_db, namespace, PASSES_SHOWN)
        .await
        .map_err(unanswered::page_in_postgres)?;
    let passes = passes.iter().map(pass_row).collect();
    Ok(render(&DriftPage {
        chrome: chrome(&session, "drift", q.notice),
        passes,
    }))
}

fn pass_row(p: &history::Pass) -> PassRow {
    let r = &p.report;
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let totals = r.get("totals").cloned().unwrap_or(Value::Null);
    let classes = ["missing", "stale", "ahead", "corrupt", "orphan", "lagging"]
        .iter()
        .filter(|k| n(&totals, k) > 0)
        .map(|k| format!("{k} {}", n(&totals, k)))
        .collect::<Vec<_>>()
        .join(", ");
    let drift: u64 = ["missing", "stale", "ahead", "corrupt", "orphan"]
        .iter()
        .map(|k| n(&totals, k))
        .sum();
    let listed = r
        .get("boards")
        .and_then(Value::as_array)
        .map(|boards| {
            boards
                .iter()
                .filter_map(|b| {
                    let summary = board_summary(b)?;
                    Some(ListedBoard {
                        board: b.get("board")?.as_str()?.to_owned(),
                        summary,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let outcome = match r.get("aborted").and_then(Value::as_str) {
        Some(why) => format!("stopped early: {why}"),
        None if r.get("completed").and_then(Value::as_bool) == Some(true) => "completed".into(),
        None => "partial (more boards next pass)".into(),
    };
    PassRow {
        id: p.id,
        finished: utc(p.finished_at_ms),
        kind: if r.get("dry_run").and_then(Value::as_bool) == Some(true) {
            "dry run".into()
        } else {
            "repairing".into()
        },
        outcome,
        boards: n(r, "boards_visited").to_string(),
        checked: n(&totals, "checked").to_string(),
        drift: drift.to_string(),
        classes: if classes.is_empty() {
            "none".into()
        } else {
            classes
        },
        repaired: format!("{} / {}", n(&totals, "repaired"), n(&totals, "removed")),
        listed,
    }
}

/// A board's entry in a pass report, in words; None for a clean board.
fn board_summary(b: &Value) -> Option<String> {
    let n = |k: &str| b.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut parts: Vec<String> = ["missing", "stale", "ahead", "corrupt", "orphan"]
        .iter()
        .filter(|k| n(k) > 0)
        .map(|k| format!("{k} {}", n(k)))
        .collect();
    if n("repaired") + n("removed") > 0 {
        parts.push(format!(
            "repaired {}, removed {}",
            n("repaired"),
            n("removed")
        ));
    }
    if n("failed") > 0 {
        parts.push(format!("failed {}", n("failed")));
    }
    if let Some(e) = b.get("error").and_then(Value::as_str) {
        parts.push(format!("error: {e}"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Each board's last reconcile result in words, from the newest pass that listed it.
pub(super) async fn last_passes(state: &AppState, boards: &[&str]) -> HashMap<String, String> {
    let namespace = state.store.keys().namespace();
    match history::last_board_results(&state.read_db, namespace, boards).await {
        Ok(found) => found
            .into_iter()
            .map(|(board, pass)| {
                let what = board_summary(&pass.report).unwrap_or_else(|| {
                    format!(
                        "clean ({} checked)",
                        pass.report
                            .get("checked")
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    )
                });
                (
                    board,
                    format!("pass {} at {}: {what}", pass.id, utc(pass.finished_at_ms)),
                )
            })
            .collect(),
        // Every board's result is unknown then, not "not in the last passes' reports".
        Err(e) => {
            let why = unanswered::unknown(unanswered::postgres(&e));
            boards
                .iter()
                .map(|b| ((*b).to_owned(), why.clone()))
                .collect()
        }
    }
}
