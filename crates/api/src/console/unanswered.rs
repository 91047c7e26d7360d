//! What the console shows in place of a figure a store could not give. A page that meets a
//! failed read says which store failed ("Redis did not answer", "PostgreSQL did not answer")
//! where the figure would be, never a state the failure only looks like (a verdict of
//! `missing`, "no period", an empty table): the operator acts on what the page says. The
//! error itself (tokio-postgres's or redis's wording, addresses included) goes to the api's
//! log, not to the page.

use ledgerboard_core::db::StoreError;
use ledgerboard_core::projection::ReadModelError;

use super::ConsoleError;
use crate::error::ApiError;

pub const POSTGRES: &str = "PostgreSQL did not answer";
pub const REDIS: &str = "Redis did not answer";
const POSTGRES_FAILED: &str = "PostgreSQL answered with an error (see the api log)";
const REDIS_FAILED: &str = "Redis answered with an error (see the api log)";

/// Which store failed, in words, with the error logged.
pub fn postgres(e: &StoreError) -> &'static str {
    tracing::warn!(error = %e, "console: a PostgreSQL read failed");
    match e {
        StoreError::Unavailable(_) => POSTGRES,
        _ => POSTGRES_FAILED,
    }
}

/// As [`postgres`], for Redis: no connection, a refused or dropped one and a timeout are
/// Redis not answering; an error reply is an answer.
pub fn redis(e: &ReadModelError) -> &'static str {
    tracing::warn!(error = %e, "console: a Redis read failed");
    if no_answer(e) { REDIS } else { REDIS_FAILED }
}

fn no_answer(e: &ReadModelError) -> bool {
    match e {
        ReadModelError::Unavailable(_) => true,
        ReadModelError::Redis(e) => {
            e.is_io_error()
                || e.is_timeout()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
        }
        ReadModelError::Shared(e) => no_answer(e),
        ReadModelError::Reply(_) | ReadModelError::Tls(_) => false,
    }
}

/// A figure that could not be read: "unknown: <which store>".
pub fn unknown(why: &str) -> String {
    format!("unknown: {why}")
}

/// A read the whole page needs failed: the page is the console's error page (503 when the
/// store did not answer), saying which store.
pub fn page_in_postgres(e: StoreError) -> ConsoleError {
    let why = postgres(&e);
    match ApiError::from(e) {
        ApiError::Unavailable(_) => ConsoleError::Unanswered(why),
        other => ConsoleError::Api(other),
    }
}

/// As [`page_in_postgres`], for Redis.
pub fn page_in_redis(e: ReadModelError) -> ConsoleError {
    let why = redis(&e);
    if no_answer(&e) {
        ConsoleError::Unanswered(why)
    } else {
        ConsoleError::Api(ApiError::Internal(e.to_string()))
    }
}

/// An api function that reads and writes PostgreSQL only (definitions, moderation): its
/// `Unavailable` is PostgreSQL's.
pub fn api_in_postgres(e: ApiError) -> ConsoleError {
    match e {
        ApiError::Unavailable(detail) => {
            tracing::warn!(error = %detail, "console: a PostgreSQL call failed");
            ConsoleError::Unanswered(POSTGRES)
        }
        other => ConsoleError::Api(other),
    }
}
