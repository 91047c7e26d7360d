//! The review queue (`/console/reviews`, issue 38): scores held by their boards' review rules,
//! oldest first, each with the rule that held it, approved or rejected with a reason through
//! the api's own decision (`routes::reviews::decision`, which records who, when and why with
//! the held score), audited as every console action is.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use ledgerboard_core::board::guard::review::{self, State as HeldState};
use ledgerboard_core::model::EventId;
use serde::Deserialize;
use serde_json::json;

use super::actions::{audit, done};
use super::guard::{ConsoleForm, ConsoleQuery};
use super::pages::{Notice, chrome};
use super::session::{self, Session};
use super::unanswered;
use super::views::{HeldView, ReviewsPage};
use super::{ConsoleError, render};
use crate::error::ApiError;
use crate::state::AppState;

/// Most held scores a page shows (the oldest; the rest follow as these are decided).
const SHOWN: i64 = 100;
/// Recent decisions shown under the queue.
const DECIDED_SHOWN: i64 = 20;

fn view(h: review::Held) -> HeldView {
    HeldView {
        board: match &h.period {
            Some(p) => format!("{}~{p}", h.board),
            None => h.board.clone(),
        },
        event_id: h.event_id,
        user_id: h.user_id,
        fields: h.fields.to_string(),
        rule: h.rule,
        detail: h.detail,
        held_at: h.held_at,
        state: h.state,
        decided: match (h.decided_by, h.decided_at) {
            (Some(by), Some(at)) => format!("{by} at {at}"),
            _ => String::new(),
        },
        reason: h.reason.unwrap_or_default(),
    }
}

pub async fn reviews(
    State(state): State<AppState>,
    session: Session,
    ConsoleQuery(q): ConsoleQuery<Notice>,
) -> Result<Response, ConsoleError> {
    let list = |s| review::list(&state.read_db, s, None, SHOWN, None);
    let pending = list(HeldState::Pending)
        .await
        .map_err(unanswered::page_in_postgres)?;
    let mut decided = Vec::new();
    for s in [HeldState::Approved, HeldState::Rejected] {
        decided.extend(
            review::list(&state.read_db, s, None, DECIDED_SHOWN, None)
                .await
                .map_err(unanswered::page_in_postgres)?,
        );
    }
    // Newest decision first.
    decided.sort_by(|a, b| b.decided_at.cmp(&a.decided_at));
    decided.truncate(DECIDED_SHOWN as usize);
    Ok(render(&ReviewsPage {
        chrome: chrome(&session, "reviews", q.notice),
        pending: pending.into_iter().map(view).collect(),
        decided: decided.into_iter().map(view).collect(),
    }))
}

#[derive(Deserialize)]
pub struct DecideForm {
    csrf: String,
    event: String,
    /// `approve` or `reject`: the button pressed.
    decision: String,
    reason: String,
}

/// Approves or rejects one held score, as `POST /v1/reviews/{event_id}/approve|reject` does.
pub async fn decide(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    ConsoleForm(form): ConsoleForm<DecideForm>,
) -> Result<Response, ConsoleError> {
    session::check_action(&session, &headers, &form.csrf)?;
    let event = EventId::parse(form.event.trim()).map_err(ApiError::from)?;
    let approve = match form.decision.as_str() {
        "approve" => true,
        "reject" => false,
        _ => {
            return Err(
                ApiError::MalformedBody("decision must be approve or reject".into()).into(),
            );
        }
    };
    let decided =
        crate::routes::reviews::decision(&state, &session.identity, &event, &form.reason, approve)
            .await
            .map_err(unanswered::api_in_postgres)?;
    audit(
        &state,
        session.actor(),
        if approve {
            "review_approve"
        } else {
            "review_reject"
        },
        None,
        None,
        json!({ "event_id": decided.event_id, "reason": form.reason }),
    )
    .await;
    let what = match &decided.outcome {
        Some(o) => format!("approved: score {} (version {})", o.score, o.version),
        None => "rejected".to_owned(),
    };
    Ok(done(
        "/console/reviews",
        &format!("Held score {event} {what}."),
    ))
}
