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

use axum::extract::rejection::PathRejection;

use crate::error::ApiError;

pub(crate) fn path_error(rejection: PathRejection) -> ApiError {
    ApiError::BadPath(rejection.body_text())
}
