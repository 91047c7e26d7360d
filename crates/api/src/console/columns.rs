//! How the console shows a board's columns: a definition's columns and feeds in a line, and an
//! entry's tuple (`12 · 93120` on a racing board; the score alone on a board of one column),
//! from PostgreSQL's answer or from what Redis stores (its spelling carries the other columns).

use ledgerboard_core::board::definition::{BoardDefinition, WritePolicy};
use ledgerboard_core::model::{Columns, RankedEntry};
use ledgerboard_core::projection::inspect::Observed;

/// An entry's values as its answer gives them.
pub(super) fn entry(e: &RankedEntry) -> String {
    match &e.scores {
        Some(values) => join(values),
        None => e.score.to_string(),
    }
}

/// What Redis holds for a member: its score, and its other columns from the stored key (a
/// stored value that is not one the projection writes shows as such).
pub(super) fn stored(columns: Columns, seen: &Observed) -> String {
    let Some(score) = seen.score else {
        return "absent".into();
    };
    if !columns.several() {
        return format!("{score:.0}");
    }
    match seen.stored() {
        Some((_, key)) => join(&columns.values(score as i64, key.rest)),
        None => format!("{score:.0} · (unreadable columns)"),
    }
}

/// The values of a standing (frozen or not): the columns, or the score.
pub(super) fn values(score: i64, scores: Option<&[i64]>) -> String {
    scores.map_or_else(|| score.to_string(), join)
}

fn join(values: &[i64]) -> String {
    values
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The definition's columns, feeds, write policy, attempts and review rules, as the board page's header line ends
/// (empty for a board of one column that feeds none and takes servers' scores only).
pub(super) fn describe(def: &BoardDefinition) -> String {
    let mut out = String::new();
    if !def.columns.is_empty() {
        let columns: Vec<String> = def
            .columns
            .iter()
            .map(|c| format!("{} {} ({}..{})", c.name, c.order.as_str(), c.min, c.max))
            .collect();
        out.push_str(&format!(", columns {}", columns.join(" then ")));
    }
    if !def.feeds.is_empty() {
        let feeds: Vec<&str> = def.feeds.iter().map(|f| f.as_str()).collect();
        out.push_str(&format!(", feeds {}", feeds.join(", ")));
    }
    if def.write_policy == WritePolicy::Player {
        out.push_str(", players post their own scores");
    }
    if let Some(a) = &def.attempts {
        out.push_str(&format!(", attempts {}", serde_json::json!(a)));
    }
    if let Some(r) = &def.review {
        out.push_str(&format!(", review {}", serde_json::json!(r)));
    }
    out
}
