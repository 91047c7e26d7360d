//! The one place where failures become HTTP answers. Every error body has the shape
//! `{"error":{"code":"...","message":"..."}}`; `code` is stable, `message` is for people.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ledgerboard_core::auth::player::PlayerTokenError;
use ledgerboard_core::board::SubmitError;
use ledgerboard_core::board::definition::{DefineError, DefinitionError};
use ledgerboard_core::board::guard::review::DecideError;
use ledgerboard_core::board::guard::{AttemptRefusal, StartError};
use ledgerboard_core::board::moderation::ModerationError;
use ledgerboard_core::competition::CompetitionError;
use ledgerboard_core::db::StoreError;
use ledgerboard_core::events::EventsError;
use ledgerboard_core::model::ValidationError;
use ledgerboard_core::webhook::WebhookError;
use serde::Serialize;

#[derive(Debug)]
pub enum ApiError {
    /// The request body is not the JSON the endpoint takes (400).
    MalformedBody(String),
    /// A path segment could not be read (400).
    BadPath(String),
    /// A query parameter could not be read, or is unknown (400).
    BadQuery(String),
    /// A query parameter outside its range (422).
    OutOfRange(String),
    /// An `after` cursor that is not one a page gave, or given with `offset` (422).
    InvalidCursor(String),
    /// An `ids` list that is empty, too long, repeats an id or holds an invalid one (422).
    InvalidIds(String),
    /// A `period` that is not `current`, `previous` or a period id (422).
    InvalidPeriod(String),
    /// A period asked of a board that never resets, or a reset of one (422).
    NeverResets(String),
    /// `period=previous` of a board whose first period is the current one (404).
    NoSuchPeriod(String),
    /// The standings of a period that is not closed (404).
    PeriodNotClosed(String),
    /// `consistency=eventual` with `min_version` the projection does not hold yet (409): the
    /// caller asked for the projection only, and it cannot honour read-your-writes yet.
    Stale,
    /// A well-formed request with an invalid value (422).
    Invalid(ValidationError),
    /// A board definition that cannot be declared as stated (422).
    InvalidDefinition(DefinitionError),
    /// A change of the rule (operator, sort, tie break) of a board that has entries (409).
    BoardHasEntries(String),
    /// Links to other boards that cannot be declared (422): `feeds_unknown`, `feeds_columns`,
    /// `feeds_value`, `feeds_loop`.
    InvalidLinks(&'static str, String),
    /// A board the command's board feeds refused it (its own status and code; the body names
    /// the board): nothing was written on any board.
    Fed {
        board: String,
        error: Box<ApiError>,
    },
    /// The score would leave the range a Redis double holds exactly (422).
    ScoreOutOfRange,
    /// The event id was used before with another payload (409).
    EventIdReused(String),
    /// A moderation command with an invalid field (422): the code names it
    /// (`invalid_action_id`, `invalid_action`, `board_required`, `board_not_allowed`,
    /// `invalid_reason`).
    InvalidModeration(&'static str, String),
    /// The moderation action id was used before for another command (409).
    ActionIdReused(String),
    /// Body larger than the configured limit (413).
    PayloadTooLarge,
    NotFound,
    MethodNotAllowed,
    /// No valid bearer token (401, with `WWW-Authenticate: Bearer`).
    Unauthenticated(&'static str),
    /// A valid token without the scope this request needs (403).
    Forbidden(&'static str),
    /// A player token that does not authenticate (401): expired, forged, of a key rotated out.
    PlayerToken(PlayerTokenError),
    /// A valid player token asking for what a player may not do (403): `player_board` (a board
    /// outside the token), `player_user` (another user id), `board_server_only` (a board whose
    /// write policy is `server`), `player_scope` (anything but its own scores and entries).
    PlayerDenied(&'static str, String),
    /// Past the rate limit of this token or address (429, with `Retry-After`).
    RateLimited(std::time::Duration),
    /// A score's attempt, or an attempt's start, refused (its code; 422, 403 for another
    /// player's, 409 for one used, expired or past the cap): nothing was written.
    Attempt(AttemptRefusal),
    /// A refusal with its own status and code: a review decision not taken
    /// (`review_unknown` 404, `review_decided` and `review_period_over` 409, `invalid_reason`
    /// 422), an attempt's `invalid_request_id` (422).
    Coded(StatusCode, &'static str, String),
    /// A dependency did not answer in time, or at all (503, with Retry-After).
    Unavailable(String),
    /// The request took longer than `api.request_timeout_ms` (503).
    Timeout,
    /// A bug or an unexpected state; the details go to the log only (500).
    Internal(String),
}

/// The body of every error answer.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable.
    code: &'static str,
    /// For people.
    message: String,
    /// The linked board that refused a command, when it was not the board the command was
    /// sent to (nothing was written on any board).
    #[serde(skip_serializing_if = "Option::is_none")]
    board: Option<String>,
}

impl ApiError {
    pub(crate) fn parts(&self) -> (StatusCode, &'static str, String) {
        match self {
            Self::MalformedBody(m) => (StatusCode::BAD_REQUEST, "malformed_body", m.clone()),
            Self::BadPath(m) => (StatusCode::BAD_REQUEST, "invalid_path", m.clone()),
            Self::BadQuery(m) => (StatusCode::BAD_REQUEST, "invalid_query", m.clone()),
            Self::OutOfRange(m) => (StatusCode::UNPROCESSABLE_ENTITY, "out_of_range", m.clone()),
            Self::InvalidCursor(m) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_cursor", m.clone()),
            Self::InvalidIds(m) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_ids", m.clone()),
            Self::InvalidPeriod(m) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_period", m.clone()),
            Self::NeverResets(board) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "board_never_resets",
                format!("board {board} never resets: it has one period, read without period= (declare it with a reset to give it periods)"),
            ),
            Self::PeriodNotClosed(period) => (
                StatusCode::NOT_FOUND,
                "period_not_closed",
                format!("period {period} is not closed: it is open, has not been closed yet (the reconciler closes ended periods after its passes), or never existed"),
            ),
            Self::NoSuchPeriod(board) => (
                StatusCode::NOT_FOUND,
                "no_such_period",
                format!("board {board} has no period before its current one"),
            ),
            Self::Stale => (
                StatusCode::CONFLICT,
                "projection_behind",
                "the projection does not hold that version yet; retry, or read with consistency=bounded".into(),
            ),
            Self::Invalid(e) => (StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string()),
            Self::InvalidDefinition(e) => {
                (StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string())
            }
            Self::BoardHasEntries(m) => (StatusCode::CONFLICT, "board_has_entries", m.clone()),
            Self::InvalidLinks(code, m) => (StatusCode::UNPROCESSABLE_ENTITY, code, m.clone()),
            Self::Fed { board, error } => {
                let (status, code, message) = error.parts();
                (status, code, format!("board {board}: {message}"))
            }
            Self::ScoreOutOfRange => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "score_out_of_range",
                StoreError::ScoreOutOfRange.to_string(),
            ),
            Self::EventIdReused(m) => (StatusCode::CONFLICT, "event_id_reused", m.clone()),
            Self::InvalidModeration(code, m) => (StatusCode::UNPROCESSABLE_ENTITY, code, m.clone()),
            Self::ActionIdReused(m) => (StatusCode::CONFLICT, "action_id_reused", m.clone()),
            Self::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is larger than this server accepts".into(),
            ),
            Self::NotFound => (
                StatusCode::NOT_FOUND,
                "not_found",
                "no such resource".into(),
            ),
            Self::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this resource does not take that method".into(),
            ),
            Self::Unauthenticated(m) => (StatusCode::UNAUTHORIZED, "unauthenticated", (*m).to_owned()),
            Self::Forbidden(m) => (StatusCode::FORBIDDEN, "forbidden", (*m).to_owned()),
            Self::PlayerToken(e) => (StatusCode::UNAUTHORIZED, e.code(), e.to_string()),
            Self::PlayerDenied(code, m) => (StatusCode::FORBIDDEN, code, m.clone()),
            Self::Attempt(e) => {
                let status = match e {
                    AttemptRefusal::Foreign => StatusCode::FORBIDDEN,
                    AttemptRefusal::Used | AttemptRefusal::Expired | AttemptRefusal::Limit => {
                        StatusCode::CONFLICT
                    }
                    _ => StatusCode::UNPROCESSABLE_ENTITY,
                };
                (status, e.code(), e.to_string())
            }
            Self::Coded(status, code, m) => (*status, code, m.clone()),
            Self::RateLimited(_) => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "too many requests from this token or address; retry after the Retry-After seconds".into(),
            ),
            Self::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "a dependency is unavailable or overloaded; retry later".into(),
            ),
            Self::Timeout => (
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                "the request took too long; retry later".into(),
            ),
            Self::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error".into(),
            ),
        }
    }
}

impl ApiError {
    /// The status code this error is answered with.
    pub fn status(&self) -> StatusCode {
        self.parts().0
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            Self::Internal(detail) => tracing::error!(error = %detail, "request failed"),
            Self::Unavailable(detail) => tracing::warn!(error = %detail, "dependency unavailable"),
            _ => {}
        }
        let (status, code, message) = self.parts();
        let board = match &self {
            Self::Fed { board, .. } => Some(board.clone()),
            _ => None,
        };
        let mut response = (
            status,
            Json(ErrorBody {
                error: ErrorDetail {
                    code,
                    message,
                    board,
                },
            }),
        )
            .into_response();
        let headers = response.headers_mut();
        match &self {
            Self::Unavailable(_) | Self::Timeout => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            Self::RateLimited(wait) => {
                // Whole seconds, rounded up, at least 1.
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                headers.insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
            }
            Self::Unauthenticated(_) | Self::PlayerToken(_) => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"ledgerboard\""),
                );
            }
            _ => {}
        }
        response
    }
}

/// A request body that could not be read: too large (the body limit), or not read at all.
impl From<axum::extract::rejection::BytesRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge
        } else {
            ApiError::MalformedBody(rejection.body_text())
        }
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        Self::Invalid(e)
    }
}

impl From<DefinitionError> for ApiError {
    fn from(e: DefinitionError) -> Self {
        Self::InvalidDefinition(e)
    }
}

impl From<DefineError> for ApiError {
    fn from(e: DefineError) -> Self {
        match e {
            DefineError::Invalid(e) => Self::InvalidDefinition(e),
            DefineError::HasEntries { .. } => Self::BoardHasEntries(e.to_string()),
            DefineError::FeedsUnknown(_) => Self::InvalidLinks("feeds_unknown", e.to_string()),
            DefineError::FeedsColumns { .. } => Self::InvalidLinks("feeds_columns", e.to_string()),
            DefineError::FeedsValue { .. } => Self::InvalidLinks("feeds_value", e.to_string()),
            DefineError::FeedsLoop(_) => Self::InvalidLinks("feeds_loop", e.to_string()),
            DefineError::Store(e) => e.into(),
            // PUT replaces whatever is there (`Expect::Any`): neither can happen.
            DefineError::AlreadyDeclared(_) | DefineError::Changed(_) => {
                Self::Internal(e.to_string())
            }
        }
    }
}

impl From<SubmitError> for ApiError {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::Invalid(e) => e.into(),
            SubmitError::Store(e) => e.into(),
            SubmitError::Fed { board, error } => Self::Fed {
                board: board.to_string(),
                error: Box::new((*error).into()),
            },
            SubmitError::ServerOnly(_) => Self::PlayerDenied("board_server_only", e.to_string()),
            SubmitError::Attempt(e) => Self::Attempt(e),
            SubmitError::Competition(code) => {
                let (status, code, m) = match code.as_str() {
                    "competition_not_started" => (
                        StatusCode::CONFLICT,
                        "competition_not_started",
                        "the competition has not started: scores are taken from its starts_at",
                    ),
                    "competition_ended" => (
                        StatusCode::CONFLICT,
                        "competition_ended",
                        "the competition has ended: scores are taken until its ends_at",
                    ),
                    "competition_not_entered" => (
                        StatusCode::FORBIDDEN,
                        "competition_not_entered",
                        "the competition requires an entry: POST /v1/competitions/{id}/entries first",
                    ),
                    _ => return Self::Internal(format!("competition refusal {code:?}")),
                };
                Self::Coded(status, code, m.to_owned())
            }
        }
    }
}

impl From<StartError> for ApiError {
    fn from(e: StartError) -> Self {
        match e {
            StartError::Refused(e) => Self::Attempt(e),
            StartError::Store(e) => e.into(),
        }
    }
}

impl From<CompetitionError> for ApiError {
    fn from(e: CompetitionError) -> Self {
        if let CompetitionError::Store(e) = e {
            return e.into();
        }
        let status = match &e {
            CompetitionError::Store(_) | CompetitionError::Unknown => StatusCode::NOT_FOUND,
            CompetitionError::UnknownRun => StatusCode::NOT_FOUND,
            CompetitionError::NotStarted
            | CompetitionError::Ended
            | CompetitionError::Full
            | CompetitionError::Closing
            | CompetitionError::Started
            | CompetitionError::BelowEntrants(_) => StatusCode::CONFLICT,
            CompetitionError::Invalid(..) | CompetitionError::NotABoard(..) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
        };
        Self::Coded(status, e.code(), e.to_string())
    }
}

impl From<DecideError> for ApiError {
    fn from(e: DecideError) -> Self {
        let m = e.to_string();
        match e {
            DecideError::Unknown(_) => Self::Coded(StatusCode::NOT_FOUND, "review_unknown", m),
            DecideError::Decided(..) => Self::Coded(StatusCode::CONFLICT, "review_decided", m),
            DecideError::PeriodOver => Self::Coded(StatusCode::CONFLICT, "review_period_over", m),
            DecideError::Reason => {
                Self::Coded(StatusCode::UNPROCESSABLE_ENTITY, "invalid_reason", m)
            }
            DecideError::Submit(e) => e.into(),
            DecideError::Store(e) => e.into(),
        }
    }
}

impl From<ModerationError> for ApiError {
    fn from(e: ModerationError) -> Self {
        match e {
            ModerationError::InvalidReason => {
                Self::InvalidModeration("invalid_reason", e.to_string())
            }
            ModerationError::IdReused(_) => Self::ActionIdReused(e.to_string()),
            ModerationError::Store(e) => e.into(),
        }
    }
}

impl From<EventsError> for ApiError {
    fn from(e: EventsError) -> Self {
        let m = e.to_string();
        match e {
            EventsError::UnknownKind(_) => Self::Coded(StatusCode::BAD_REQUEST, "invalid_kinds", m),
            // The events after the cursor are gone: no page can say what it missed.
            EventsError::CursorExpired { .. } => Self::Coded(StatusCode::GONE, "cursor_expired", m),
            EventsError::Store(e) => e.into(),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        if let WebhookError::Store(e) = e {
            return e.into();
        }
        let status = match &e {
            WebhookError::Store(_) | WebhookError::Unknown => StatusCode::NOT_FOUND,
            WebhookError::InvalidUrl(_)
            | WebhookError::HttpRefused
            | WebhookError::PrivateAddress { .. }
            | WebhookError::InvalidKind(_)
            | WebhookError::InvalidBoards(_)
            | WebhookError::InvalidLanes
            | WebhookError::InvalidSecret => StatusCode::UNPROCESSABLE_ENTITY,
        };
        Self::Coded(status, e.code(), e.to_string())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::ScoreOutOfRange => Self::ScoreOutOfRange,
            StoreError::EventIdReused(_) => Self::EventIdReused(e.to_string()),
            // Contended only survives the store's retries under extreme contention: a retry
            // later is the right answer for the client.
            // DefinitionChanged survives the handler's one retry only when the definition
            // changes twice during one command: retrying later is right too.
            StoreError::Unavailable(_)
            | StoreError::Contended(_)
            | StoreError::DefinitionChanged => Self::Unavailable(e.to_string()),
            // A command's refusal by its attempt reaches the api as SubmitError::Attempt; here
            // only through a path that does not know its verdicts, which is a bug.
            StoreError::SchemaMismatch(_)
            | StoreError::Internal(_)
            | StoreError::AttemptRefused { .. }
            | StoreError::CompetitionRefused(_) => Self::Internal(e.to_string()),
        }
    }
}
