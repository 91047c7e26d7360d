//! HTTP routes. Handlers validate input into domain types, call the store, and return JSON;
//! status codes are decided in `error.rs` only.

pub mod attempts;
pub mod boards;
pub mod commands;
pub mod competition_runs;
pub mod competitions;
pub mod events;
pub mod moderation;
pub mod periods;
pub mod read_shapes;
pub mod reads;
pub mod reviews;
pub(crate) mod target;
pub mod webhooks;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use serde::Deserialize;

use crate::error::ApiError;

pub(crate) fn path_error(rejection: PathRejection) -> ApiError {
    ApiError::BadPath(rejection.body_text())
}

/// A JSON body as `T`: the body's own refusal (too large, unreadable) first, then a body that
/// is not `T` as `malformed_body`, saying the shape `expected` and what serde found.
pub(crate) fn json_body<T: for<'de> Deserialize<'de>>(
    body: Result<Bytes, BytesRejection>,
    expected: &str,
) -> Result<T, ApiError> {
    let body = body?;
    serde_json::from_slice(&body)
        .map_err(|e| ApiError::MalformedBody(format!("expected {expected}: {e}")))
}
