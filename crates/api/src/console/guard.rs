//! Who is asking comes first. Every console route but the login page, logout and the assets
//! sits behind [`require_session`], a route layer that checks the `lb_console` cookie before
//! any handler's extractor reads the request: without a session the answer is the login
//! redirect whatever the form, path or query holds (a request without `csrf` used to reach
//! serde first and get its 422). Behind it, the handlers read the request through
//! [`ConsoleForm`], [`ConsoleQuery`] and [`ConsolePath`], whose failures are the console's own
//! 400 page: an extractor's wording (serde's field names, axum's rejection text) describes
//! our types, not what the operator should do, and goes to the log.

use axum::Form;
use axum::extract::rejection::{FormRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::ConsoleError;
use super::session::{self, Session};
use crate::error::ApiError;
use crate::state::AppState;

/// The session check of every signed-in route: the login redirect without a session, 403
/// for a token without the admin scope, else the request goes on with its [`Session`].
pub async fn require_session(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    match session::session(&state, req.headers()) {
        Ok(session) => {
            req.extensions_mut().insert(session);
            next.run(req).await
        }
        Err(refused) => ConsoleError::from(refused).into_response(),
    }
}

/// The session [`require_session`] found. A handler outside that layer finds none and sends
/// the operator to the login page rather than acting without one.
impl<S: Send + Sync> FromRequestParts<S> for Session {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Session>()
            .cloned()
            .ok_or(ConsoleError::Login)
    }
}

/// A console form (`application/x-www-form-urlencoded`).
pub struct ConsoleForm<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ConsoleForm<T> {
    type Rejection = ConsoleError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Form::<T>::from_request(req, state)
            .await
            .map(|Form(v)| ConsoleForm(v))
            .map_err(form_error)
    }
}

fn form_error(rejection: FormRejection) -> ConsoleError {
    tracing::debug!(error = %rejection.body_text(), "console form not read");
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::PayloadTooLarge.into();
    }
    ApiError::MalformedBody(
        "this form is not one the console's pages send (a field is missing or malformed): \
         reload the page and send it again"
            .into(),
    )
    .into()
}

/// A console page's query string.
pub struct ConsoleQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ConsoleQuery<T> {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| ConsoleQuery(v))
            .map_err(|r: QueryRejection| {
                tracing::debug!(error = %r.body_text(), "console query not read");
                ApiError::BadQuery(
                    "this address's query is not one the console's pages make: follow a link \
                     from the console"
                        .into(),
                )
                .into()
            })
    }
}

/// A console page's path segments.
pub struct ConsolePath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ConsolePath<T> {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ConsolePath(v))
            .map_err(|r: PathRejection| {
                tracing::debug!(error = %r.body_text(), "console path not read");
                ApiError::BadPath(
                    "this address is not one the console's pages link to: follow a link from \
                     the console"
                        .into(),
                )
                .into()
            })
    }
}
