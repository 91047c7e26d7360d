//! The webhook subscriptions (`/console/webhooks`): each with its circuit, and per lane how far
//! behind the log it is, its failed attempts and last error, its parked deliveries (ticked and
//! requeued here, as `lbctl webhook requeue` does) and retention's gaps. Creating a
//! subscription stays with `lbctl webhook create` and `POST /v1/webhooks`, which show the
//! secret once; the console never shows a secret.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use ledgerboard_core::webhook::{self, WebhookError, parked};
use serde_json::json;

use super::actions::{audit, done, read_form};
use super::guard::ConsoleQuery;
use super::pages::{Notice, chrome};
use super::session::{self, Session};
use super::unanswered;
use super::views::{
    WebhookGapView, WebhookLaneView, WebhookPage, WebhookParkedView, WebhookView, WebhooksPage,
};
use super::{ConsoleError, render};
use crate::error::ApiError;
use crate::state::AppState;

/// Subscriptions the list shows (the first, in id order).
const SHOWN: i64 = 200;
/// Parked deliveries a subscription's page shows (the oldest).
const PARKED_SHOWN: i64 = 200;

fn failed(e: WebhookError) -> ConsoleError {
    match e {
        WebhookError::Store(s) => unanswered::page_in_postgres(s),
        other => ConsoleError::from(ApiError::from(other)),
    }
}

fn view(s: webhook::Subscription) -> WebhookView {
    let all = |v: &[String], none: &str| {
        if v.is_empty() {
            none.to_owned()
        } else {
            v.join(", ")
        }
    };
    WebhookView {
        kinds: all(&s.kinds, "every kind"),
        boards: all(&s.boards, "every board"),
        circuit: match &s.circuit_open_until {
            Some(until) => format!("{} until {until}", s.circuit),
            None => s.circuit.clone(),
        },
        state: if s.enabled { "enabled" } else { "disabled" }.to_owned(),
        id: s.id,
        url: s.url,
        lanes: s.lanes,
        failures: s.failures,
    }
}

pub async fn list(
    State(state): State<AppState>,
    session: Session,
    ConsoleQuery(q): ConsoleQuery<Notice>,
) -> Result<Response, ConsoleError> {
    let subscriptions = webhook::subscription::list(&state.read_db, None, SHOWN)
        .await
        .map_err(failed)?;
    Ok(render(&WebhooksPage {
        chrome: chrome(&session, "webhooks", q.notice),
        subscriptions: subscriptions.into_iter().map(view).collect(),
    }))
}

pub async fn show(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
    ConsoleQuery(q): ConsoleQuery<Notice>,
) -> Result<Response, ConsoleError> {
    let detail = webhook::subscription::get(&state.read_db, &id)
        .await
        .map_err(failed)?;
    let parked = parked::list(&state.read_db, &id, 0, PARKED_SHOWN)
        .await
        .map_err(failed)?;
    let head = detail.head;
    Ok(render(&WebhookPage {
        chrome: chrome(&session, "webhooks", q.notice),
        lanes: detail
            .lane_status
            .into_iter()
            .map(|l| WebhookLaneView {
                lane: l.lane,
                position: l.position,
                behind: (head - l.position).max(0),
                attempts: l.attempts,
                next_attempt_at: l.next_attempt_at,
                last_error: l.last_error.unwrap_or_default(),
                lease_holder: l.lease_holder.unwrap_or_default(),
            })
            .collect(),
        parked: parked
            .into_iter()
            .map(|p| WebhookParkedView {
                position: p.position,
                event_id: p.event_id.to_string(),
                kind: p.kind,
                board: p.board,
                attempts: p.attempts,
                last_error: p.last_error.unwrap_or_default(),
                parked_at: p.parked_at,
                requeued: p.requeued_at.is_some(),
            })
            .collect(),
        gaps: detail
            .gaps
            .into_iter()
            .map(|g| WebhookGapView {
                lane: g.lane,
                after: g.after_position,
                through: g.through_position,
                recorded_at: g.recorded_at,
            })
            .collect(),
        head,
        parked_total: detail.parked,
        requeued_total: detail.requeued,
        subscription: view(detail.subscription),
    }))
}

/// The requeue form of a subscription's page: the positions of the ticked parked deliveries
/// (`position` repeated).
pub async fn requeue(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ConsoleError> {
    let mut csrf = String::new();
    let mut positions = Vec::new();
    for (key, value) in read_form(body)? {
        match key.as_str() {
            "csrf" => csrf = value,
            "position" => positions.push(
                value
                    .parse::<i64>()
                    .map_err(|_| ApiError::MalformedBody(format!("not a position: {value:?}")))?,
            ),
            _ => {}
        }
    }
    session::check_action(&session, &headers, &csrf)?;
    let page = format!("/console/webhooks/{id}");
    if positions.is_empty() {
        return Ok(done(&page, "No delivery was selected."));
    }
    let requeued = parked::requeue(&state.db, &id, &positions)
        .await
        .map_err(failed)?;
    audit(
        &state,
        session.actor(),
        "webhook_requeue",
        None,
        None,
        json!({ "subscription": id, "positions": positions, "requeued": requeued }),
    )
    .await;
    Ok(done(
        &page,
        &format!(
            "{requeued} of {} deliveries requeued: the dispatcher sends each once more.",
            positions.len()
        ),
    ))
}
