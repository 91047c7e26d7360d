//! The one place where PostgreSQL failures (SQLSTATE codes, pool and I/O errors) become domain
//! errors. Callers match on [`StoreError`], never on SQLSTATE.

use deadpool_postgres::PoolError;
use tokio_postgres::error::SqlState;

use crate::model::EventId;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// PostgreSQL cannot be reached or did not answer in time: retry later (HTTP 503).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The command would move the score out of ±(2^53 − 1).
    #[error("the resulting score would leave the exact range ±(2^53 - 1)")]
    ScoreOutOfRange,
    /// The event id was used before with another board, user or delta.
    #[error("event id {0} was already used with a different board, user or delta")]
    EventIdReused(EventId),
    /// The board's definition changed since the command was validated against it (another
    /// revision): validate it again against the current one.
    #[error("the board's definition changed while the command was validated")]
    DefinitionChanged,
    /// Lost a race with a concurrent transaction (same event id, deadlock, serialization
    /// failure); running the same call again is safe.
    #[error("concurrent update conflict: {0}")]
    Contended(String),
    /// The database's schema is not the one this binary was built for.
    #[error("{0}")]
    SchemaMismatch(String),
    /// The command's attempt refused it (its statement's verdict, `attempt_used` and the like,
    /// and for one too fast, how long it has to go): nothing was written (`board/guard/`).
    #[error("the attempt refused the command: {verdict}")]
    AttemptRefused { verdict: String, wait_ms: i64 },
    /// The board is a competition's and refused the command (`competition_not_started`,
    /// `competition_ended`, `competition_not_entered`): nothing was written (`competition/`).
    #[error("the competition refused the command: {0}")]
    CompetitionRefused(String),
    /// Anything else: a bug or an unexpected database state.
    #[error("database error: {0}")]
    Internal(String),
}

/// What a failed statement means to the code that ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Another transaction recorded the same event id first: run the command again.
    EventRace,
    /// Serialization failure, deadlock, or a lock not granted within `lock_timeout` (a board
    /// definition's change waits that long for commands in flight): safe to run again.
    Transient,
    ScoreOutOfRange,
    Unavailable,
    Other,
}

pub(crate) fn classify(err: &tokio_postgres::Error) -> Failure {
    let Some(db) = err.as_db_error() else {
        // No server answer: the connection broke, timed out or never opened.
        return Failure::Unavailable;
    };
    let code = db.code();
    // The same new key arriving twice at once: the later insert loses, and running it again
    // finds the first (a score's event id; an attempt's request key, board/guard/attempt.rs; a
    // competition's entrant, competition/).
    if *code == SqlState::UNIQUE_VIOLATION
        && matches!(
            db.constraint(),
            Some("score_events_pkey" | "attempts_request")
        )
    {
        Failure::EventRace
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::LOCK_NOT_AVAILABLE
    {
        Failure::Transient
    } else if (*code == SqlState::CHECK_VIOLATION
        && db.constraint() == Some("user_scores_score_range"))
        || *code == SqlState::NUMERIC_VALUE_OUT_OF_RANGE
    {
        Failure::ScoreOutOfRange
    } else if code.code().starts_with("08") // connection exception
        || code.code().starts_with("53") // insufficient resources (too many connections, …)
        || code.code().starts_with("57")
    // operator intervention: query_canceled (statement timeout), admin shutdown, cannot connect now
    {
        Failure::Unavailable
    } else {
        Failure::Other
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(err: tokio_postgres::Error) -> Self {
        match classify(&err) {
            Failure::ScoreOutOfRange => StoreError::ScoreOutOfRange,
            Failure::Unavailable => StoreError::Unavailable(describe(&err)),
            Failure::EventRace | Failure::Transient => StoreError::Contended(describe(&err)),
            _ => StoreError::Internal(describe(&err)),
        }
    }
}

impl From<PoolError> for StoreError {
    fn from(err: PoolError) -> Self {
        match err {
            PoolError::Backend(e) => e.into(),
            PoolError::Timeout(kind) => {
                StoreError::Unavailable(format!("no database connection in time ({kind:?})"))
            }
            PoolError::Closed => StoreError::Unavailable("the connection pool is closed".into()),
            other => StoreError::Internal(other.to_string()),
        }
    }
}

/// The server's message and code when there is one (tokio-postgres' Display says only "db
/// error"), else the client-side cause. Never includes the connection URL.
pub(crate) fn describe(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut msg = err.to_string();
            let mut source = std::error::Error::source(err);
            while let Some(cause) = source {
                msg.push_str(": ");
                msg.push_str(&cause.to_string());
                source = cause.source();
            }
            msg
        }
    }
}
