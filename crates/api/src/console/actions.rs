//! The console's actions (POST forms): each has its session from the route layer
//! (`guard.rs`), checks its CSRF token, runs the api's, `lbctl`'s or the reconciler's own
//! code, audits what it did, and redirects (303) to a page with a notice, so that a reload
//! never repeats it.

use axum::Form;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
use ledgerboard_core::board::definition::{self, DefinitionError};
use ledgerboard_core::db::{history, outbox};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::generation::{self, RequestKind};
use serde::Deserialize;
use serde_json::json;

use super::guard::{ConsoleForm, ConsolePath};
use super::session::{self, Session};
use super::unanswered;
use super::views::LoginPage;
use super::{ConsoleError, render};
use crate::error::ApiError;
use crate::routes::boards::DefinitionBody;
use crate::routes::moderation::ModerationBody;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct LoginForm {
    token: String,
}

/// Logs in with a token of `auth.tokens` that has the admin scope. A wrong token is answered
/// like a missing one (401), without saying which tokens exist.
pub async fn login(State(state): State<AppState>, req: Request) -> Response {
    let secure = session::over_tls(&state, &req);
    let Ok(Form(form)) = Form::<LoginForm>::from_request(req, &state).await else {
        return refused(
            axum::http::StatusCode::BAD_REQUEST,
            "the form lacks its token",
        );
    };
    let token = form.token.trim();
    let identity = match state.auth.token(token) {
        Ok(identity) => identity,
        Err(_) => {
            return refused(
                axum::http::StatusCode::UNAUTHORIZED,
                "that token is not valid",
            );
        }
    };
    if identity.require_admin().is_err() {
        return refused(
            axum::http::StatusCode::FORBIDDEN,
            "that token lacks the admin scope the console needs",
        );
    }
    let Some(cookie) = session::start(token, secure) else {
        return refused(
            axum::http::StatusCode::BAD_REQUEST,
            "that token holds characters a cookie cannot keep; make one with lbctl token new",
        );
    };
    audit(
        &state,
        identity.name(),
        "console_login",
        None,
        None,
        json!({}),
    )
    .await;
    ([(header::SET_COOKIE, cookie)], Redirect::to("/console")).into_response()
}

fn refused(status: axum::http::StatusCode, why: &str) -> Response {
    let mut page = render(&LoginPage {
        error: Some(why.to_owned()),
    });
    *page.status_mut() = status;
    page
}

#[derive(Deserialize)]
pub struct CsrfOnly {
    csrf: String,
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    req: Request,
) -> Result<Response, ConsoleError> {
    let secure = session::over_tls(&state, &req);
    // Outside the session layer (a session that lost its admin scope still ends), so the
    // session is checked here, before the form is read.
    let session = session::session(&state, &headers)?;
    let ConsoleForm(form) = ConsoleForm::<CsrfOnly>::from_request(req, &state).await?;
    session::check_action(&session, &headers, &form.csrf)?;
    Ok((
        [(header::SET_COOKIE, session::end(secure))],
        Redirect::to("/console/login"),
    )
        .into_response())
}

#[derive(Deserialize)]
pub struct DefineForm {
    csrf: String,
    board: String,
    display_name: Option<String>,
    operator: String,
    sort: Option<String>,
    tie_break: Option<String>,
    reset: Option<String>,
    time_zone: Option<String>,
    /// `name:order[:min:max]`, separated by commas (`definition::parse_column`).
    columns: Option<String>,
    /// Board ids, separated by commas.
    feeds: Option<String>,
    /// `server` or `player`.
    write_policy: Option<String>,
    /// The attempts' rule and the review rules as JSON (empty: none).
    attempts: Option<String>,
    review: Option<String>,
}

/// A form field holding JSON (the attempts' rule, the review rules): absent when empty, its
/// definition error when it is not JSON.
fn json_field(
    raw: Option<String>,
    error: DefinitionError,
) -> Result<Option<serde_json::Value>, ApiError> {
    raw.map(|r| serde_json::from_str(&r).map_err(|_| ApiError::from(error)))
        .transpose()
}

/// Declares a board: the definition `PUT /v1/boards/{board}` would (`routes::boards::define`).
pub async fn define(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    ConsoleForm(form): ConsoleForm<DefineForm>,
) -> Result<Response, ConsoleError> {
    session::check_action(&session, &headers, &form.csrf)?;
    let board = BoardId::parse(form.board.trim()).map_err(ApiError::from)?;
    let given = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let list = |v: Option<String>| {
        given(v).map(|v| {
            v.split(',')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
        })
    };
    let columns = list(form.columns)
        .map(|specs| {
            specs
                .iter()
                .map(|c| definition::parse_column(c))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .map_err(ApiError::from)?;
    let body = DefinitionBody {
        display_name: given(form.display_name),
        operator: Some(form.operator),
        // With columns, the first one's order is the sort (the form's select always sends one).
        sort: given(form.sort).filter(|_| columns.is_none()),
        tie_break: given(form.tie_break),
        min_score: None,
        max_score: None,
        min_delta: None,
        max_delta: None,
        reset: given(form.reset),
        time_zone: given(form.time_zone),
        columns,
        feeds: list(form.feeds),
        write_policy: given(form.write_policy),
        attempts: json_field(given(form.attempts), DefinitionError::Attempts)?,
        review: json_field(given(form.review), DefinitionError::Review)?,
    };
    let defined = crate::routes::boards::define(&state, &board, &body)
        .await
        .map_err(unanswered::api_in_postgres)?;
    let d = &defined.definition;
    audit(
        &state,
        session.actor(),
        "define_board",
        Some(board.as_str()),
        None,
        json!({ "revision": d.revision, "created": defined.created, "changed": defined.changed }),
    )
    .await;
    let what = if defined.created {
        "declared"
    } else if defined.changed {
        "changed"
    } else {
        "already as stated"
    };
    Ok(done(
        &format!("/console/boards/{board}"),
        &format!("Board {board} {what} (revision {}).", d.revision),
    ))
}

#[derive(Deserialize)]
pub struct RebuildForm {
    csrf: String,
    /// The board whose projection is rebuilt: the board, or the period of it the page showed.
    target: String,
}

/// Asks the reconciler to rebuild the board's projection whatever its seal says (a forced
/// rebuild request, `projection::generation`); the reconciler holding the lock serves it
/// within its request poll, as it serves the requests reads send.
pub async fn rebuild(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    ConsolePath(board): ConsolePath<String>,
    ConsoleForm(form): ConsoleForm<RebuildForm>,
) -> Result<Response, ConsoleError> {
    ask_reconciler(
        &state,
        &session,
        &headers,
        &board,
        &form,
        RequestKind::Forced,
        "rebuild",
        "Rebuild of {target} requested: the reconciler rebuilds it within a second or so (a large board takes longer); reload to see it whole.",
    )
    .await
}

/// Asks the reconciler to check the board now: a pass over it that repairs the drift it finds
/// and records its report (the drift history, the board's last reconcile result).
pub async fn check(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    ConsolePath(board): ConsolePath<String>,
    ConsoleForm(form): ConsoleForm<RebuildForm>,
) -> Result<Response, ConsoleError> {
    ask_reconciler(
        &state,
        &session,
        &headers,
        &board,
        &form,
        RequestKind::Check,
        "check",
        "Check of {target} requested: the reconciler runs a pass over it within a second or so and repairs what it finds; reload to see its result.",
    )
    .await
}

/// A request of `kind` for the form's board, audited as `action`; the notice names the board
/// where it says `{target}`.
#[allow(clippy::too_many_arguments)] // each is one fact of the request; a struct would only rename them
async fn ask_reconciler(
    state: &AppState,
    session: &Session,
    headers: &HeaderMap,
    board: &str,
    form: &RebuildForm,
    kind: RequestKind,
    action: &str,
    notice: &str,
) -> Result<Response, ConsoleError> {
    session::check_action(session, headers, &form.csrf)?;
    let target = own_target(board, &form.target)?;
    generation::request(&state.store, kind, &target)
        .await
        .map_err(unanswered::page_in_redis)?;
    audit(
        state,
        session.actor(),
        action,
        Some(target.as_str()),
        None,
        json!({}),
    )
    .await;
    Ok(done(
        &format!("/console/boards/{board}"),
        &notice.replace("{target}", target.as_str()),
    ))
}

/// The board a form acts on: `board` itself or one of its periods, as the page showed it.
fn own_target(board: &str, target: &str) -> Result<BoardId, ApiError> {
    let board = BoardId::parse(board)?;
    let target = BoardId::parse_stored(target)?;
    if target.base() != board {
        return Err(ApiError::MalformedBody(format!(
            "{target} is not {board} or one of its periods"
        )));
    }
    Ok(target)
}

/// The requeue form: the ids of the ticked rows (`id` repeated), as `lbctl parked requeue
/// --id …` takes them.
pub async fn requeue(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ConsoleError> {
    let mut csrf = String::new();
    let mut ids = Vec::new();
    for (key, value) in read_form(body)? {
        match key.as_str() {
            "csrf" => csrf = value,
            "id" => ids.push(
                value
                    .parse::<i64>()
                    .map_err(|_| ApiError::MalformedBody(format!("not an outbox id: {value:?}")))?,
            ),
            _ => {}
        }
    }
    session::check_action(&session, &headers, &csrf)?;
    if ids.is_empty() {
        return Ok(done("/console/parked", "No row was selected."));
    }
    let requeued = outbox::requeue_parked(&state.db, Some(&ids), None)
        .await
        .map_err(unanswered::page_in_postgres)?;
    state.db.wake_projectors();
    audit(
        &state,
        session.actor(),
        "requeue",
        None,
        None,
        json!({ "ids": ids, "requeued": requeued }),
    )
    .await;
    Ok(done(
        "/console/parked",
        &format!("{requeued} of {} rows requeued.", ids.len()),
    ))
}

/// A form read by hand (for keys repeated as sent): its pairs, or the console's own 400 (the
/// body's own error, axum's wording, is not the operator's business).
pub(super) fn read_form(
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Vec<(String, String)>, ApiError> {
    let body = body.map_err(|r| match ApiError::from(r) {
        ApiError::PayloadTooLarge => ApiError::PayloadTooLarge,
        _ => ApiError::MalformedBody("the form could not be read: send it again".into()),
    })?;
    Ok(form_pairs(&body))
}

/// `application/x-www-form-urlencoded` pairs, keys repeated as sent (axum's `Form` keeps one
/// value per key).
fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

#[derive(Deserialize)]
pub struct ModerateForm {
    csrf: String,
    action: String,
    user_id: String,
    board: Option<String>,
    reason: String,
}

/// A moderation command, as `POST /v1/moderation` applies it (`routes::moderation::moderate`:
/// audited in `moderation_actions`), with a new action id: the form is the operator's single
/// command, and the redirect after it keeps a reload from sending it twice.
pub async fn moderate(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    ConsoleForm(form): ConsoleForm<ModerateForm>,
) -> Result<Response, ConsoleError> {
    session::check_action(&session, &headers, &form.csrf)?;
    let board = form
        .board
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty() && form.action == "remove");
    // A period's board (`board~period`) names its period apart, as the api's body does.
    let board = board
        .as_deref()
        .map(BoardId::parse_stored)
        .transpose()
        .map_err(ApiError::from)?;
    let period = board.as_ref().and_then(|b| b.period()).map(str::to_owned);
    let board = board.map(|b| b.base().to_string());
    let user = form.user_id.trim().to_owned();
    let body = ModerationBody {
        action_id: uuid::Uuid::new_v4().to_string(),
        action: form.action.clone(),
        user_id: user.clone(),
        board,
        period,
        reason: form.reason,
    };
    let done_ = crate::routes::moderation::moderate(&state, &session.identity, body)
        .await
        .map_err(unanswered::api_in_postgres)?;
    Ok(done(
        "/console/moderation",
        &format!("{} of {user} applied: {}.", done_.action, done_.result),
    ))
}

/// The audit row of an action that moderation's own audit does not hold. The action has
/// happened: a row that cannot be written is logged, not turned into a failure of the action.
pub(super) async fn audit(
    state: &AppState,
    actor: &str,
    action: &str,
    board: Option<&str>,
    user: Option<&str>,
    detail: serde_json::Value,
) {
    if let Err(e) = history::record_action(&state.db, actor, action, board, user, &detail).await {
        tracing::error!(error = %e, actor, action, "the console action's audit row could not be written");
    }
}

/// A 303 to `page` with the action's notice.
pub(super) fn done(page: &str, notice: &str) -> Response {
    let encoded: String = url::form_urlencoded::byte_serialize(notice.as_bytes()).collect();
    let sep = if page.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{page}{sep}notice={encoded}")).into_response()
}
