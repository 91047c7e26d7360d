//! Moderation (issue 22): removing a user's entry from a board, banning and unbanning a user,
//! erasing a user. Each is an admin command with a client-supplied id (a UUID, like a score
//! command's event id), a reason and an actor (the token's name), run once per id in ONE
//! transaction with its audit row (`moderation_actions`, migration V6): a repeat with the same
//! payload answers what the first run did, a reuse of the id with another payload is refused.
//!
//! Each changes user_scores in the transaction that writes the outbox rows carrying the change
//! to Redis, like a score command: the absolute state of each member touched, with one more
//! version, so a score projected late is older and stale (`lua/project.lua`, its tombstones).
//!
//! - remove (`sql/moderation_remove.sql`): the entry goes; its version stays in
//!   `removed_entries`, so a later entry of the user continues from it. Under the table lock a
//!   ban takes (`sql/moderation_lock.sql`), so that no command racing the removal writes the
//!   new entry from a snapshot that predates it.
//! - ban (`sql/moderation_ban.sql`): the user's entries on every board are hidden (kept, with
//!   `hidden`), every read leaves them out and ranks close up; commands for the user are still
//!   applied, hidden. Under a table lock (`sql/moderation_lock.sql`) so that no entry of the
//!   user is written visible after the ban.
//! - unban (`sql/moderation_unban.sql`): the hidden entries are shown again as they stand.
//! - erase (`sql/moderation_erase.sql`): every row naming the user goes or carries a random
//!   pseudonym instead; the projection takes out every trace. Each closed period with a frozen
//!   row of the user gets its digest re-sealed over the pseudonymised rows, after checking the
//!   old seal with the id put back (`sql/moderation_erase_reseal.sql`, migration V13). The
//!   event log (migration V20) keeps no trace either: its rows naming the user, in a column
//!   or in a payload (a close's standings), carry the pseudonym.
//!
//! Each action that changed entries writes its events in its transaction
//! (`sql/moderation_event.sql`): one per declared board it changed.

use serde_json::json;
use tokio_postgres::types::Type;
use uuid::Uuid;

use super::definition::{LOCK_TIMEOUT, LOCK_WAIT};
use crate::db::{Database, Op, Statement, StoreError, commit};
use crate::model::{BoardId, UserId};

/// The longest reason a moderation command may give, in characters (the table's CHECK).
pub const MAX_REASON_CHARS: usize = 512;

/// A moderation command's action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Remove the user's entry from the board.
    Remove { board: BoardId, user: UserId },
    /// Hide the user from every read of every board.
    Ban { user: UserId },
    /// Show a banned user's entries again.
    Unban { user: UserId },
    /// Erase every trace of the user.
    Erase { user: UserId },
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Remove { .. } => "remove",
            Action::Ban { .. } => "ban",
            Action::Unban { .. } => "unban",
            Action::Erase { .. } => "erase",
        }
    }

    pub fn user(&self) -> &UserId {
        match self {
            Action::Remove { user, .. }
            | Action::Ban { user }
            | Action::Unban { user }
            | Action::Erase { user } => user,
        }
    }

    pub fn board(&self) -> Option<&BoardId> {
        match self {
            Action::Remove { board, .. } => Some(board),
            _ => None,
        }
    }
}

/// One moderation command: its id, what it does, why, and who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub action_id: Uuid,
    pub action: Action,
    pub reason: String,
    pub actor: String,
}

impl Command {
    /// The payload the id is bound to: a reuse of the id is a repeat only with the same one.
    /// The actor is not part of it (a retry by another operator is the same command).
    fn payload(&self) -> String {
        json!([
            self.action.name(),
            self.action.board().map(BoardId::as_str),
            self.action.user().as_str(),
            self.reason,
        ])
        .to_string()
    }
}

/// What a moderation command did (or, for a repeat, did the first time).
#[derive(Debug, Clone, PartialEq)]
pub struct Moderated {
    pub action_id: Uuid,
    pub action: &'static str,
    /// True when this id was applied before: nothing was written now.
    pub duplicate: bool,
    /// When it was applied, by the database clock (RFC 3339, UTC): once its lock was granted,
    /// just before its commit (`sql/moderation_result.sql`).
    pub at: String,
    /// Who applied it (the first run's actor for a repeat).
    pub actor: String,
    /// What it changed: `entries` (how many entries it removed, hid, showed or erased),
    /// `boards`, and for an erasure the counts of every kind of row it removed or
    /// pseudonymised.
    pub result: serde_json::Value,
}

#[derive(Debug, thiserror::Error)]
pub enum ModerationError {
    /// The reason is empty or longer than [`MAX_REASON_CHARS`].
    #[error("a moderation command needs a reason of 1 to {MAX_REASON_CHARS} characters")]
    InvalidReason,
    /// The id was used before for another command (action, board, user or reason).
    #[error("action id {0} was already used for another moderation command")]
    IdReused(Uuid),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<tokio_postgres::Error> for ModerationError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(e.into())
    }
}

/// Parameters: action id, action, board, user as recorded, reason, actor, payload.
static AUDIT: Statement<7> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_audit.sql"),
    [
        Type::UUID,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
    ],
);
/// Parameters: action id, result.
static RESULT: Statement<2> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_result.sql"),
    [Type::UUID, Type::TEXT],
);
static LOCK: Statement<0> =
    Statement::new(Op::Moderate, include_str!("sql/moderation_lock.sql"), []);
/// Parameters: board, user.
static REMOVE: Statement<2> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_remove.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: action id, user.
static BAN: Statement<2> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_ban.sql"),
    [Type::UUID, Type::TEXT],
);
/// Parameters: user.
static UNBAN: Statement<1> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_unban.sql"),
    [Type::TEXT],
);
/// Parameters: user, pseudonym, action id.
static ERASE: Statement<3> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_erase.sql"),
    [Type::TEXT, Type::TEXT, Type::UUID],
);

/// Parameters: user.
static ERASE_SEAL_LOCK: Statement<1> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_erase_seal_lock.sql"),
    [Type::TEXT],
);

/// Parameters: user, pseudonym, action id.
static ERASE_RESEAL: Statement<3> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_erase_reseal.sql"),
    [Type::TEXT, Type::TEXT, Type::UUID],
);

/// Parameters: user, pseudonym, the event log's last position the erasure saw.
static ERASE_SWEEP: Statement<3> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_erase_sweep.sql"),
    [Type::TEXT, Type::TEXT, Type::INT8],
);

/// Parameters: action id, kind, user as recorded, actor, reason, boards changed.
static EVENT: Statement<6> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_event.sql"),
    [
        Type::UUID,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT_ARRAY,
    ],
);

/// Parameters: user.
static ERASE_PENDING: Statement<1> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_erase_pending.sql"),
    [Type::TEXT],
);

/// How many of `user`'s erasure rows still wait for the projector (pending or parked): the
/// boards whose Redis keys may still name the user. Zero once every one is projected.
pub async fn erasure_pending(db: &Database, user: &UserId) -> Result<i64, StoreError> {
    let row = db.query_one(&ERASE_PENDING, [&user.as_str()]).await?;
    Ok(row.try_get("pending")?)
}

/// Parameters: user.
static BANNED: Statement<1> = Statement::new(
    Op::Moderate,
    include_str!("sql/moderation_banned.sql"),
    [Type::TEXT],
);

/// Whether `user` is banned now.
pub async fn is_banned(db: &Database, user: &UserId) -> Result<bool, StoreError> {
    let row = db.query_one(&BANNED, [&user.as_str()]).await?;
    Ok(row.try_get("banned")?)
}

/// How often [`moderate`] runs its transaction again after losing a race (the same new id
/// arriving concurrently, a deadlock, the table lock not granted in time).
const MAX_ATTEMPTS: usize = 4;

/// Applies `cmd` exactly once per action id (see the module's documentation).
pub async fn moderate(db: &Database, cmd: &Command) -> Result<Moderated, ModerationError> {
    let chars = cmd.reason.trim().chars().count();
    // PostgreSQL's text cannot hold a NUL: refused here as the reason's error, not the store's.
    if chars == 0 || cmd.reason.chars().count() > MAX_REASON_CHARS || cmd.reason.contains('\0') {
        return Err(ModerationError::InvalidReason);
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        match moderate_once(db, cmd).await {
            Ok(Some(done)) => {
                if !done.duplicate {
                    db.wake_projectors();
                }
                return Ok(done);
            }
            Ok(None) if attempt < MAX_ATTEMPTS => continue,
            Err(ModerationError::Store(StoreError::Contended(_))) if attempt < MAX_ATTEMPTS => {
                continue;
            }
            Ok(None) => {
                return Err(StoreError::Contended(format!(
                    "moderation action {} kept racing a concurrent arrival",
                    cmd.action_id
                ))
                .into());
            }
            Err(e) => return Err(e),
        }
    }
}

/// One transaction of [`moderate`]; None when a concurrent arrival of the same id won (run it
/// again: it then answers as a repeat).
async fn moderate_once(db: &Database, cmd: &Command) -> Result<Option<Moderated>, ModerationError> {
    let mut client = db.client().await?;
    // Dropped without commit (an early return), the transaction rolls back.
    let tx = client.transaction().await?;
    let stmts = db.statements();
    let wait = format!("{}ms", LOCK_WAIT.as_millis());
    stmts.query(&tx, &LOCK_TIMEOUT, [&wait]).await?;
    let action = cmd.action.name();
    let user = cmd.action.user().as_str();
    let board = cmd.action.board().map(BoardId::as_str);
    // An erasure's audit row never holds the erased id.
    let pseudonym = format!("erased-{}", Uuid::new_v4().simple());
    let recorded_user = match cmd.action {
        Action::Erase { .. } => pseudonym.as_str(),
        _ => user,
    };
    let payload = cmd.payload();
    let rows = stmts
        .query(
            &tx,
            &AUDIT,
            [
                &cmd.action_id,
                &action,
                &board,
                &recorded_user,
                &cmd.reason,
                &cmd.actor,
                &payload,
            ],
        )
        .await?;
    let Some(audit) = rows.first() else {
        return Ok(None);
    };
    if !audit.try_get::<_, bool>("inserted")? {
        let at: String = audit.try_get("at")?;
        if !audit.try_get::<_, bool>("same")? {
            return Err(ModerationError::IdReused(cmd.action_id));
        }
        let result: String = audit.try_get("result")?;
        let result = serde_json::from_str(&result)
            .map_err(|e| StoreError::Internal(format!("stored moderation result: {e}")))?;
        return Ok(Some(Moderated {
            action_id: cmd.action_id,
            action,
            duplicate: true,
            at,
            actor: audit.try_get("actor")?,
            result,
        }));
    }
    // The boards (as stored) whose entries of the user the action changed: its events'.
    let changed: Vec<String>;
    let result = match &cmd.action {
        Action::Remove { board, user } => {
            // The table lock a ban takes: a score command of the member in flight finishes
            // first, and one arriving now waits and takes its snapshot after the commit. Without
            // it, a command whose snapshot predates the commit and whose insert waited on the
            // deleted row wrote the new entry from that snapshot, from version 1 rather than
            // the removal's plus one: at or below the tombstone, so the projection dropped it
            // (tests/moderation_race.rs).
            stmts.execute(&tx, &LOCK, []).await?;
            let row = stmts
                .query_one(&tx, &REMOVE, [&board.as_str(), &user.as_str()])
                .await?;
            let entries: i64 = row.try_get("entries")?;
            changed = if entries > 0 {
                vec![board.as_str().to_owned()]
            } else {
                Vec::new()
            };
            json!({
                "entries": entries,
                "boards": if entries > 0 { vec![board.as_str()] } else { vec![] },
                "score": row.try_get::<_, Option<i64>>("score")?,
                "was_hidden": row.try_get::<_, bool>("was_hidden")?,
            })
        }
        Action::Ban { user } | Action::Unban { user } => {
            stmts.execute(&tx, &LOCK, []).await?;
            let row = if matches!(cmd.action, Action::Ban { .. }) {
                stmts
                    .query_one(&tx, &BAN, [&cmd.action_id, &user.as_str()])
                    .await?
            } else {
                stmts.query_one(&tx, &UNBAN, [&user.as_str()]).await?
            };
            changed = row.try_get("boards")?;
            json!({
                "changed": row.try_get::<_, bool>("changed")?,
                "entries": row.try_get::<_, i64>("entries")?,
                "boards": changed,
            })
        }
        Action::Erase { user } => {
            // The long statement (it reads the whole events table) runs without the table
            // lock, so commands go on; then the sweep, under the lock for milliseconds, takes
            // what a command of the user that committed meanwhile left
            // (sql/moderation_erase_sweep.sql, tests/moderation_race.rs).
            // The closed periods the user is frozen in are re-sealed one erasure at a time:
            // their close rows first, then the erasure's snapshot, then the new digests
            // (migration V13), so that `period verify` can still check them.
            stmts
                .execute(&tx, &ERASE_SEAL_LOCK, [&user.as_str()])
                .await?;
            let row = stmts
                .query_one(&tx, &ERASE, [&user.as_str(), &pseudonym, &cmd.action_id])
                .await?;
            let sealed = stmts
                .query_one(
                    &tx,
                    &ERASE_RESEAL,
                    [&user.as_str(), &pseudonym, &cmd.action_id],
                )
                .await?;
            stmts.execute(&tx, &LOCK, []).await?;
            let log_position: i64 = row.try_get("log_position")?;
            let sweep = stmts
                .query_one(
                    &tx,
                    &ERASE_SWEEP,
                    [&user.as_str(), &pseudonym, &log_position],
                )
                .await?;
            let count = |column: &str| -> Result<i64, tokio_postgres::Error> {
                Ok(row.try_get::<_, i64>(column)? + sweep.try_get::<_, i64>(column)?)
            };
            let mut boards: Vec<String> = row.try_get("boards")?;
            boards.extend(sweep.try_get::<_, Vec<String>>("boards")?);
            boards.sort();
            boards.dedup();
            changed = boards.clone();
            json!({
                "entries": count("entries")?,
                "removed_entries": row.try_get::<_, i64>("removed_entries")?,
                "ban": row.try_get::<_, bool>("ban")?,
                "events": count("events")?,
                "outbox_rows": count("outbox_rows")?,
                "audit_rows": row.try_get::<_, i64>("audit_rows")?,
                "standings_rows": row.try_get::<_, i64>("standings_rows")?,
                "periods_resealed": sealed.try_get::<_, i64>("periods")?,
                "periods_mismatched": sealed.try_get::<_, i64>("mismatched")?,
                "boards": boards,
            })
        }
    };
    let text = result.to_string();
    // The time the action took effect (after its lock), not the audit row's insert.
    let at: String = stmts
        .query_one(&tx, &RESULT, [&cmd.action_id, &text])
        .await?
        .try_get("at")?;
    let kind = match cmd.action {
        Action::Remove { .. } => "moderation.removed",
        Action::Ban { .. } => "moderation.banned",
        Action::Unban { .. } => "moderation.unbanned",
        Action::Erase { .. } => "moderation.erased",
    };
    stmts
        .execute(
            &tx,
            &EVENT,
            [
                &cmd.action_id,
                &kind,
                &recorded_user,
                &cmd.actor,
                &cmd.reason,
                &changed,
            ],
        )
        .await?;
    commit(tx).await?;
    Ok(Some(Moderated {
        action_id: cmd.action_id,
        action,
        duplicate: false,
        at,
        actor: cmd.actor.clone(),
        result,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_binds_action_board_user_and_reason_but_not_the_actor() {
        let user = UserId::parse("u").expect("user");
        let board = BoardId::parse("b").expect("board");
        let cmd = |action: Action, reason: &str, actor: &str| Command {
            action_id: Uuid::nil(),
            action,
            reason: reason.into(),
            actor: actor.into(),
        };
        let remove = Action::Remove {
            board: board.clone(),
            user: user.clone(),
        };
        let a = cmd(remove.clone(), "cheat", "ops").payload();
        assert_eq!(a, cmd(remove.clone(), "cheat", "other").payload());
        assert_ne!(a, cmd(remove, "spam", "ops").payload());
        assert_ne!(
            a,
            cmd(Action::Ban { user: user.clone() }, "cheat", "ops").payload()
        );
        assert_ne!(
            cmd(Action::Ban { user: user.clone() }, "x", "ops").payload(),
            cmd(Action::Unban { user }, "x", "ops").payload()
        );
    }
}
