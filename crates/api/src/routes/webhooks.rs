//! Webhook subscriptions (admin scope): `POST/GET /v1/webhooks`, `GET/PATCH/DELETE
//! /v1/webhooks/{id}`, `GET /v1/webhooks/{id}/parked`, `POST /v1/webhooks/{id}/parked/requeue`.
//! The rules are core's (`webhook/`); the deliveries are the dispatcher's
//! (docs/dispatcher.md). An `http://` URL is refused unless `api.webhook_allow_http`, and one
//! naming a non-public address unless `api.webhook_allow_private_addresses`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use ledgerboard_core::webhook::parked::{self, Parked};
use ledgerboard_core::webhook::{
    self, Change, Created, Detail, NewSubscription, Subscription, UrlRules,
};
use serde::{Deserialize, Serialize};

use super::{json_body, path_error};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

fn rules(state: &AppState) -> UrlRules {
    UrlRules {
        allow_http: state.settings.webhook_allow_http,
        allow_private_addresses: state.settings.webhook_allow_private_addresses,
    }
}

/// A new subscription.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// The receiver: an `https://` URL (`http://` only where `api.webhook_allow_http`) at a
    /// public address (a URL naming a loopback, private or link-local address is refused unless
    /// `api.webhook_allow_private_addresses`).
    #[schema(example = "https://example.com/ledgerboard/events", max_length = 2048)]
    url: String,
    /// Only these kinds (absent or empty: every kind).
    kinds: Option<Vec<String>>,
    /// Only these boards (absent or empty: every board).
    #[schema(max_items = 100)]
    boards: Option<Vec<String>>,
    /// The HMAC key (16 to 256 printable characters); absent: one is generated. Either way
    /// the answer holds it, and no later read does.
    #[schema(min_length = 16, max_length = 256)]
    secret: Option<String>,
    /// Deliveries in flight at once for this receiver (each board's events go by one lane,
    /// in order). Fixed once created. Default 1.
    #[schema(minimum = 1, maximum = 64)]
    lanes: Option<i32>,
    /// Default true.
    enabled: Option<bool>,
}

/// Subscribes a receiver to the event log: it receives the events sequenced from now on,
/// signed with the secret this answer holds (`Ledgerboard-Signature`, docs/dispatcher.md).
#[utoipa::path(
    post,
    path = "/v1/webhooks",
    operation_id = "create_webhook",
    request_body = CreateWebhook,
    responses(
        (status = 201, description = "created; the answer holds the secret, shown this once", body = Created),
        (status = 400, description = "malformed body", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 422, description = "`invalid_url`, `webhook_http_refused` (http:// without api.webhook_allow_http), `webhook_private_address` (a non-public address without api.webhook_allow_private_addresses), `invalid_kind`, `invalid_boards`, `invalid_lanes`, `invalid_secret`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "webhooks",
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Created>), ApiError> {
    identity.require_admin()?;
    let b: CreateWebhook = json_body(
        raw,
        "{\"url\", \"kinds\"?, \"boards\"?, \"secret\"?, \"lanes\"?, \"enabled\"?}",
    )?;
    let new = NewSubscription {
        url: b.url,
        kinds: b.kinds.unwrap_or_default(),
        boards: b.boards.unwrap_or_default(),
        secret: b.secret,
        lanes: b.lanes,
        enabled: b.enabled,
    };
    let created = webhook::create(&state.db, &new, rules(&state)).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// The `next` of the previous page.
    after: Option<String>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
}

fn limit(raw: Option<u64>, max: i64) -> Result<i64, ApiError> {
    let limit = i64::try_from(raw.unwrap_or(100)).unwrap_or(i64::MAX);
    if (1..=max).contains(&limit) {
        Ok(limit)
    } else {
        Err(ApiError::OutOfRange(format!("limit must be 1 to {max}")))
    }
}

/// A page of subscriptions.
#[derive(Serialize, utoipa::ToSchema)]
pub struct WebhookPage {
    webhooks: Vec<Subscription>,
    /// The `after` of the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

/// Subscriptions in id order (never their secrets).
#[utoipa::path(
    get,
    path = "/v1/webhooks",
    operation_id = "list_webhooks",
    params(PageQuery),
    responses(
        (status = 200, description = "a page of subscriptions", body = WebhookPage),
        (status = 400, description = "an unknown query parameter", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 422, description = "`out_of_range`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "webhooks",
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<WebhookPage>, ApiError> {
    identity.require_admin()?;
    let Query(q) = query.map_err(|e| ApiError::BadQuery(e.body_text()))?;
    let limit = limit(q.limit, webhook::MAX_PAGE)?;
    // A subscription id or nothing: any other text (a NUL byte, say) never reaches PostgreSQL.
    if let Some(after) = q.after.as_deref()
        && !ledgerboard_core::ids::is_identifier(after)
    {
        return Err(ApiError::BadQuery(format!(
            "after must be the next of a previous page, not {after:?}"
        )));
    }
    let webhooks = webhook::list(&state.db, q.after.as_deref(), limit).await?;
    let next = (webhooks.len() as i64 == limit)
        .then(|| webhooks.last().map(|w| w.id.clone()))
        .flatten();
    Ok(Json(WebhookPage { webhooks, next }))
}

/// One subscription with each lane's progress, its parked deliveries and the events retention
/// deleted before it had them (`gaps`).
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}",
    operation_id = "get_webhook",
    params(("id" = String, Path, description = "the subscription's id")),
    responses(
        (status = 200, description = "the subscription", body = Detail),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`webhook_unknown`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "webhooks",
    security(("bearer" = []))
)]
pub async fn get_webhook(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Detail>, ApiError> {
    identity.require_admin()?;
    let Path(id) = id.map_err(path_error)?;
    Ok(Json(webhook::get(&state.db, &id).await?))
}

/// A change: each field given replaces the stored one.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhook {
    #[schema(max_length = 2048)]
    url: Option<String>,
    /// Empty: every kind.
    kinds: Option<Vec<String>>,
    /// Empty: every board.
    boards: Option<Vec<String>>,
    /// A disabled subscription gets nothing and holds back no retention; enabled again (or
    /// given a new URL), its circuit is reset and its lanes go on from where they stood.
    enabled: Option<bool>,
}

/// Changes a subscription's URL, kinds, boards or whether it is enabled (its lanes and
/// secret stay).
#[utoipa::path(
    patch,
    path = "/v1/webhooks/{id}",
    operation_id = "update_webhook",
    params(("id" = String, Path, description = "the subscription's id")),
    request_body = UpdateWebhook,
    responses(
        (status = 200, description = "changed", body = Subscription),
        (status = 400, description = "malformed body", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`webhook_unknown`", body = ErrorBody),
        (status = 422, description = "`invalid_url`, `webhook_http_refused`, `webhook_private_address`, `invalid_kind`, `invalid_boards`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "webhooks",
    security(("bearer" = []))
)]
pub async fn update(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Subscription>, ApiError> {
    identity.require_admin()?;
    let Path(id) = id.map_err(path_error)?;
    let b: UpdateWebhook = json_body(raw, "{\"url\"?, \"kinds\"?, \"boards\"?, \"enabled\"?}")?;
    let change = Change {
        url: b.url,
        kinds: b.kinds,
        boards: b.boards,
        enabled: b.enabled,
    };
    Ok(Json(
        webhook::update(&state.db, &id, &change, rules(&state)).await?,
    ))
}

/// Deletes a subscription, its lanes and its parked deliveries.
#[utoipa::path(
    delete,
    path = "/v1/webhooks/{id}",
    operation_id = "delete_webhook",
    params(("id" = String, Path, description = "the subscription's id")),
    responses(
        (status = 204, description = "deleted"),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`webhook_unknown`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "webhooks",
    security(("bearer" = []))
)]
pub async fn delete(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    identity.require_admin()?;
    let Path(id) = id.map_err(path_error)?;
    webhook::delete(&state.db, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ParkedQuery {
    /// Positions after this one (the `next` of the previous page).
    #[param(minimum = 0)]
    after: Option<i64>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
}

/// A page of parked deliveries.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ParkedPage {
    parked: Vec<Parked>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<i64>,
}

/// A subscription's parked deliveries (events it gave up on after `dispatcher.max_attempts`),
/// in position order, with their last error.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}/parked",
    operation_id = "list_webhook_parked",
    params(("id" = String, Path, description = "the subscription's id"), ParkedQuery),
    responses(
        (status = 200, description = "a page of parked deliveries", body = ParkedPage),
        (status = 400, description = "an unknown query parameter", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`webhook_unknown`", body = ErrorBody),
        (status = 422, description = "`out_of_range`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "webhooks",
    security(("bearer" = []))
)]
pub async fn parked_list(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
    query: Result<Query<ParkedQuery>, QueryRejection>,
) -> Result<Json<ParkedPage>, ApiError> {
    identity.require_admin()?;
    let Path(id) = id.map_err(path_error)?;
    let Query(q) = query.map_err(|e| ApiError::BadQuery(e.body_text()))?;
    let limit = limit(q.limit, parked::MAX_PAGE)?;
    let after = q.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::OutOfRange("after must be 0 or more".into()));
    }
    let parked = parked::list(&state.db, &id, after, limit).await?;
    let next = (parked.len() as i64 == limit)
        .then(|| parked.last().map(|p| p.position))
        .flatten();
    Ok(Json(ParkedPage { parked, next }))
}

/// Which parked deliveries to requeue.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Requeue {
    /// These positions; absent or empty (`{}`): every parked delivery of the subscription.
    #[schema(max_items = 10000)]
    positions: Option<Vec<i64>>,
}

/// How many were requeued.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Requeued {
    requeued: u64,
}

/// Delivers parked events once more (after the cause of their failures is fixed): delivered,
/// they are no longer parked; failed, they are parked again.
#[utoipa::path(
    post,
    path = "/v1/webhooks/{id}/parked/requeue",
    operation_id = "requeue_webhook_parked",
    params(("id" = String, Path, description = "the subscription's id")),
    request_body = Requeue,
    responses(
        (status = 200, description = "requeued", body = Requeued),
        (status = 400, description = "malformed body", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`webhook_unknown`", body = ErrorBody),
        (status = 422, description = "`out_of_range`: more than 10000 positions", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "webhooks",
    security(("bearer" = []))
)]
pub async fn requeue(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Requeued>, ApiError> {
    identity.require_admin()?;
    let Path(id) = id.map_err(path_error)?;
    let raw = raw?;
    // A body is required: `{}` requeues everything, and nothing does so by omission.
    let b: Requeue = json_body(Ok(raw), "{\"positions\"?: [position, …]}")?;
    let positions = b.positions.unwrap_or_default();
    if positions.len() > 10_000 {
        return Err(ApiError::OutOfRange("at most 10000 positions".into()));
    }
    let requeued = parked::requeue(&state.db, &id, &positions).await?;
    Ok(Json(Requeued { requeued }))
}
