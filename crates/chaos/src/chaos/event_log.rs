//! The event log (issue 40) held to the commands, after the drain and before anything repairs
//! anything (the rebuilds a read asks for, the moderation after the faults, the pass): every
//! command PostgreSQL recorded, each accepted command and each board it fed, has exactly one
//! `score.accepted` event, on its board (the declared board, and the period it was written to),
//! for its user, at the version it recorded; no `score.accepted` names a command that was not
//! recorded; and every command the api answered accepted has exactly one. The log and its queue
//! are read in one statement: what is not sequenced yet counts as written, since it committed
//! with its command. Killed projectors, a lost Redis and terminated sessions all happened before
//! this; a command that wrote its score without its event, or twice, is found here.

use std::collections::BTreeSet;

use uuid::Uuid;

use crate::stack::Stack;

const EVENT_LOG: &str = include_str!("../sql/event_log.sql");

/// What the check covered and found.
#[derive(Default)]
pub(super) struct EventLog {
    /// Commands recorded in `score_events`, and those with exactly one `score.accepted` as it
    /// should be.
    pub(super) recorded: i64,
    pub(super) logged_once: i64,
    /// Commands the api answered accepted, and those of them with exactly one.
    pub(super) accepted: usize,
    pub(super) accepted_once: usize,
    pub(super) problems: Vec<String>,
}

/// The check, for the commands the api accepted (`accepted`: their event ids).
pub(super) async fn check(stack: &Stack, accepted: &[Uuid]) -> anyhow::Result<EventLog> {
    let client = stack.db.client().await?;
    let rows = client.query(EVENT_LOG, &[&accepted]).await?;
    let mut out = EventLog {
        accepted: accepted.len(),
        ..EventLog::default()
    };
    let mut missed = BTreeSet::new();
    for r in &rows {
        let what: &str = r.try_get(0)?;
        let id: Option<Uuid> = r.try_get(1)?;
        let (logged, matching): (i64, i64) = (r.try_get(2)?, r.try_get(3)?);
        let id = id.map_or_else(String::new, |id| id.to_string());
        match what {
            "total" => (out.recorded, out.logged_once) = (logged, matching),
            "recorded" => out.problems.push(format!(
                "command {id}: {logged} score.accepted event(s), {matching} of them on its \
                 board, for its user, at its version; exactly one expected"
            )),
            "unrecorded" => out.problems.push(format!(
                "a score.accepted event of {id}, a command score_events does not hold"
            )),
            _ => {
                missed.insert(id.clone());
                out.problems.push(format!(
                    "command {id}, accepted by the api: {logged} score.accepted event(s)"
                ));
            }
        }
    }
    out.accepted_once = out.accepted - missed.len();
    Ok(out)
}
