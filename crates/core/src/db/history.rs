//! What operators look back on (V11): the reconciler's passes, and the audit of operators'
//! actions beside moderation's own (`moderation_actions`, V6), read as one log.
//!
//! The reconciler records each pass's report here; the console shows the newest ones and,
//! per board, the newest pass that listed it. Every console action that moderation does not
//! audit already (a definition, a requeue, a rebuild request, a member's repair, a login)
//! records one row before it answers.

use serde_json::Value;
use tokio_postgres::types::Type;

use super::{Database, Op, Statement, StoreError};

/// Parameters: namespace, report.
pub static PASS_RECORD: Statement<2> = Statement::new(
    Op::HistoryRecord,
    include_str!("sql/history/pass_record.sql"),
    [Type::TEXT, Type::JSONB],
);

/// Records one pass's report (the reconciler's `PassReport` as JSON) for `namespace`.
pub async fn record_pass(db: &Database, namespace: &str, report: &Value) -> Result<(), StoreError> {
    db.execute(&PASS_RECORD, [&namespace, report]).await?;
    Ok(())
}

/// One recorded pass.
#[derive(Debug, Clone)]
pub struct Pass {
    pub id: i64,
    pub finished_at_ms: i64,
    pub report: Value,
}

/// Parameters: namespace, limit.
pub static PASS_LIST: Statement<2> = Statement::new(
    Op::HistoryRead,
    include_str!("sql/history/pass_list.sql"),
    [Type::TEXT, Type::INT8],
);

/// The newest `limit` passes of `namespace`, newest first.
pub async fn passes(db: &Database, namespace: &str, limit: i64) -> Result<Vec<Pass>, StoreError> {
    let rows = db.query(&PASS_LIST, [&namespace, &limit]).await?;
    rows.iter()
        .map(|r| {
            Ok(Pass {
                id: r.try_get("id")?,
                finished_at_ms: millis(r.try_get("finished_at")?),
                report: r.try_get("report")?,
            })
        })
        .collect()
}

/// Parameters: namespace, boards.
pub static PASS_BOARDS: Statement<2> = Statement::new(
    Op::HistoryRead,
    include_str!("sql/history/pass_boards.sql"),
    [Type::TEXT, Type::TEXT_ARRAY],
);

/// Each of `boards`' entry (`BoardReport` as JSON: counts, error, duration) in the newest of
/// the last 50 passes that listed it, with that pass's id and end; boards no recent pass
/// listed are absent.
pub async fn last_board_results(
    db: &Database,
    namespace: &str,
    boards: &[&str],
) -> Result<Vec<(String, Pass)>, StoreError> {
    let rows = db.query(&PASS_BOARDS, [&namespace, &boards]).await?;
    rows.iter()
        .map(|r| {
            let entry: Value = r.try_get("entry")?;
            let board = entry
                .get("board")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            Ok((
                board,
                Pass {
                    id: r.try_get("id")?,
                    finished_at_ms: millis(r.try_get("finished_at")?),
                    report: entry,
                },
            ))
        })
        .collect()
}

/// Parameters: actor, action, board, user, detail.
pub static ACTION_RECORD: Statement<5> = Statement::new(
    Op::HistoryRecord,
    include_str!("sql/history/action_record.sql"),
    [Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT, Type::JSONB],
);

/// Audits one operator action.
pub async fn record_action(
    db: &Database,
    actor: &str,
    action: &str,
    board: Option<&str>,
    user: Option<&str>,
    detail: &Value,
) -> Result<(), StoreError> {
    db.execute(&ACTION_RECORD, [&actor, &action, &board, &user, detail])
        .await?;
    Ok(())
}

/// One row of the audit log.
#[derive(Debug, Clone)]
pub struct Action {
    pub at_ms: i64,
    pub actor: String,
    pub action: String,
    pub board: Option<String>,
    pub user_id: Option<String>,
    pub detail: Value,
}

/// Parameters: limit.
pub static ACTION_LIST: Statement<1> = Statement::new(
    Op::HistoryRead,
    include_str!("sql/history/action_list.sql"),
    [Type::INT8],
);

/// The newest `limit` operator actions and moderation commands, newest first.
pub async fn actions(db: &Database, limit: i64) -> Result<Vec<Action>, StoreError> {
    let rows = db.query(&ACTION_LIST, [&limit]).await?;
    rows.iter()
        .map(|r| {
            Ok(Action {
                at_ms: millis(r.try_get(0)?),
                actor: r.try_get(1)?,
                action: r.try_get(2)?,
                board: r.try_get(3)?,
                user_id: r.try_get(4)?,
                detail: r.try_get(5)?,
            })
        })
        .collect()
}

fn millis(at: std::time::SystemTime) -> i64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
