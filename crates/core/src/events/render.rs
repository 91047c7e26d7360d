//! One event row → the [`Event`] every reader shows. A score event's tuples are stored as the
//! board keeps them (order-key form, `model/order.rs`) and shown as the board's columns are
//! read (`score`, and `scores` on a board with columns), so they equal what a read answers.

use serde_json::{Value, json};
use tokio_postgres::Row;

use super::{Event, Kind};
use crate::db::StoreError;
use crate::model::Columns;

/// The row as stored, before rendering.
#[derive(Debug, Clone)]
pub struct Stored {
    pub position: i64,
    pub event_id: uuid::Uuid,
    pub kind: String,
    pub board_id: String,
    pub target: Option<String>,
    pub user_id: Option<String>,
    pub occurred_at: String,
    pub traceparent: Option<String>,
    pub score: Option<i64>,
    pub rest: [Option<i64>; 2],
    pub version: Option<i64>,
    pub improved: Option<bool>,
    pub prev_score: Option<i64>,
    pub prev_rest: [Option<i64>; 2],
    pub prev_version: Option<i64>,
    pub payload: Option<String>,
}

impl Stored {
    pub fn from_row(row: &Row) -> Result<Self, StoreError> {
        Ok(Self {
            position: row.try_get("position")?,
            event_id: row.try_get("event_id")?,
            kind: row.try_get("kind")?,
            board_id: row.try_get("board_id")?,
            target: row.try_get("target")?,
            user_id: row.try_get("user_id")?,
            occurred_at: row.try_get("occurred_at")?,
            traceparent: row.try_get("traceparent")?,
            score: row.try_get("score")?,
            rest: [row.try_get("col2")?, row.try_get("col3")?],
            version: row.try_get("version")?,
            improved: row.try_get("improved")?,
            prev_score: row.try_get("prev_score")?,
            prev_rest: [row.try_get("prev_col2")?, row.try_get("prev_col3")?],
            prev_version: row.try_get("prev_version")?,
            payload: row.try_get("payload")?,
        })
    }

    pub fn is_score(&self) -> bool {
        self.kind == Kind::ScoreAccepted.as_str()
    }
}

/// Renders `stored`; `columns` is the board's (only read for a score event).
pub fn event(stored: Stored, columns: Columns) -> Result<Event, StoreError> {
    let (period, cohort) = place(&stored.board_id, stored.target.as_deref());
    let data = if stored.is_score() {
        let tuple = |score: Option<i64>, rest: [Option<i64>; 2], version: Option<i64>| {
            score.map(|s| {
                let rest = [rest[0].unwrap_or(0), rest[1].unwrap_or(0)];
                let mut v = json!({ "score": s, "version": version });
                if columns.several() {
                    v["scores"] = json!(columns.values(s, rest));
                }
                v
            })
        };
        let mut data = tuple(stored.score, stored.rest, stored.version).unwrap_or(Value::Null);
        data["improved"] = json!(stored.improved.unwrap_or(false));
        data["previous"] =
            tuple(stored.prev_score, stored.prev_rest, stored.prev_version).unwrap_or(Value::Null);
        data
    } else {
        match stored.payload.as_deref() {
            Some(raw) => serde_json::from_str(raw).map_err(|e| {
                StoreError::Internal(format!(
                    "event {} has a payload that is not JSON: {e}",
                    stored.event_id
                ))
            })?,
            None => Value::Object(Default::default()),
        }
    };
    Ok(Event {
        id: stored.event_id,
        position: stored.position,
        kind: stored.kind,
        board: stored.board_id,
        period,
        cohort,
        user_id: stored.user_id,
        occurred_at: stored.occurred_at,
        data,
        traceparent: stored.traceparent,
    })
}

/// The period and cohort of a target board id `<board>~<period>[~<cohort>]`.
fn place(board: &str, target: Option<&str>) -> (Option<String>, Option<u32>) {
    let Some(rest) = target
        .and_then(|t| t.strip_prefix(board))
        .and_then(|t| t.strip_prefix('~'))
    else {
        return (None, None);
    };
    match rest.split_once('~') {
        Some((period, cohort)) => (Some(period.to_string()), cohort.parse().ok()),
        None => (Some(rest.to_string()), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_names_its_period_and_cohort() {
        assert_eq!(place("b", None), (None, None));
        assert_eq!(
            place("b", Some("b~2026-12-05")),
            (Some("2026-12-05".into()), None)
        );
        assert_eq!(
            place("b", Some("b~2026-12-05~000007")),
            (Some("2026-12-05".into()), Some(7))
        );
        assert_eq!(place("b", Some("other~x")), (None, None));
    }
}
