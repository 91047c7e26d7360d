//! The operator console under `/console` (issue 24): boards with their freshness and last
//! reconcile result, a board's source and projection side by side with the reconciler's
//! verdict on each member, the drift history, parked rows, rebuilds, moderation and the audit
//! log, periods with their frozen standings and digest check, the review queue of held
//! scores, and the competitions.
//!
//! Server-rendered HTML from askama templates compiled into the binary (`templates/console/`,
//! every value HTML-escaped), one stylesheet and one small script served from the binary
//! (`assets/`: the live freshness figure), no external asset. A content security policy
//! allows scripts, styles and connections from this origin only, so no inline script runs.
//!
//! Every action is the api's or the reconciler's own code: definitions through
//! `routes::boards::define`, moderation through `routes::moderation::moderate` (audited in
//! `moderation_actions`), requeues through `db::outbox::requeue_parked` (as `lbctl parked
//! requeue`), rebuilds as a forced rebuild request that the reconciler serves; each is refused
//! without the admin scope (`session.rs`) and audited in `operator_actions` (V11).

mod actions;
mod columns;
mod drift;
mod guard;
mod pages;
mod records;
mod reviews;
mod session;
mod unanswered;
mod verdict;
mod views;
mod webhooks;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use crate::error::ApiError;
use crate::state::AppState;

/// The console's routes; the caller adds the api's guard, limits and state. Every route but
/// the login page, logout and the assets is behind the session check (`guard.rs`), which runs
/// before any handler reads the request: a request without a session is sent to the login
/// page whatever its form holds. Logout stays outside: a session whose token lost the admin
/// scope must still be able to end (it checks the session itself).
pub fn routes(state: AppState) -> Router<AppState> {
    let signed_in = Router::new()
        .route("/console", get(pages::boards).post(actions::define))
        .route("/console/boards/{board}", get(pages::board))
        .route(
            "/console/boards/{board}/freshness",
            get(pages::board_freshness),
        )
        .route("/console/boards/{board}/rebuild", post(actions::rebuild))
        .route("/console/boards/{board}/check", post(actions::check))
        .route("/console/drift", get(drift::drift))
        .route("/console/parked", get(records::parked))
        .route("/console/parked/requeue", post(actions::requeue))
        .route(
            "/console/moderation",
            get(records::moderation).post(actions::moderate),
        )
        .route("/console/competitions", get(records::competitions))
        .route("/console/webhooks", get(webhooks::list))
        .route("/console/webhooks/{id}", get(webhooks::show))
        .route("/console/webhooks/{id}/requeue", post(webhooks::requeue))
        .route(
            "/console/reviews",
            get(reviews::reviews).post(reviews::decide),
        )
        .route_layer(middleware::from_fn_with_state(
            state,
            guard::require_session,
        ));
    Router::new()
        .route("/console/login", get(pages::login).post(actions::login))
        .route("/console/logout", post(actions::logout))
        .route("/console/assets/console.css", get(stylesheet))
        .route("/console/assets/console.js", get(script))
        .merge(signed_in)
        .layer(middleware::from_fn(secure_headers))
}

/// Scripts, styles, images and connections from this origin only (no inline script: the one
/// script is a file), forms posted to this origin only, never framed, nothing cached.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn secure_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it Chromium sends `Origin: null` with the console's own form
    // posts, which the origin check must refuse. No referrer leaves for another site.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn stylesheet() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("../../assets/console.css"),
    )
}

async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../assets/console.js"),
    )
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "private, max-age=300"),
        ],
        body,
    )
        .into_response()
}

/// How a console request fails: to the login page without a session; an error page saying
/// which store did not answer (503); else an error page with the api's status, stable code
/// and message (the api's own wording, never a library's).
pub enum ConsoleError {
    Login,
    Unanswered(&'static str),
    Api(ApiError),
}

impl From<ApiError> for ConsoleError {
    fn from(e: ApiError) -> Self {
        ConsoleError::Api(e)
    }
}

impl From<session::Refused> for ConsoleError {
    fn from(r: session::Refused) -> Self {
        match r {
            session::Refused::Login => ConsoleError::Login,
            session::Refused::Forbidden(e) => ConsoleError::Api(e),
        }
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        match self {
            ConsoleError::Login => Redirect::to("/console/login").into_response(),
            ConsoleError::Unanswered(why) => {
                let status = StatusCode::SERVICE_UNAVAILABLE;
                let page = views::ErrorPage {
                    status: status.as_u16(),
                    code: "unavailable",
                    message: format!(
                        "{why}: this page cannot be shown until it does; retry later."
                    ),
                };
                (status, [(header::RETRY_AFTER, "1")], render(&page)).into_response()
            }
            ConsoleError::Api(e) => {
                if let ApiError::Internal(detail) = &e {
                    tracing::error!(error = %detail, "console request failed");
                }
                let (status, code, message) = e.parts();
                let page = views::ErrorPage {
                    status: status.as_u16(),
                    code,
                    message,
                };
                (status, render(&page)).into_response()
            }
        }
    }
}

/// A page, or a 500 naming the template error (a bug: templates are checked at build time).
fn render(page: &impl askama::Template) -> Response {
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "console page could not be rendered");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
                .into_response()
        }
    }
}
