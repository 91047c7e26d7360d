//! The console's pages as askama templates (`templates/console/`): what each page shows,
//! already turned into text, so that the templates only lay it out. askama escapes every
//! value for HTML (`.html` templates), user ids and metadata included.

use askama::Template;

/// What every page's frame shows: who is logged in, the CSRF token its forms carry, the page
/// in the navigation, and the notice left by the action that led here.
pub struct Chrome {
    pub actor: String,
    pub csrf: String,
    pub nav: &'static str,
    pub notice: Option<String>,
}

#[derive(Template)]
#[template(path = "console/error.html")]
pub struct ErrorPage {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

#[derive(Template)]
#[template(path = "console/login.html")]
pub struct LoginPage {
    pub error: Option<String>,
}

pub struct BoardRow {
    pub board: String,
    pub display_name: String,
    pub definition: String,
    pub period: String,
    pub entries: String,
    pub lag: String,
    pub pending: String,
    pub parked: String,
    pub projection: SealView,
    pub last_pass: String,
}

/// A board's seal as the page shows it: its name (the api's `freshness.projection`), or that
/// Redis did not say, with the CSS class of either.
pub struct SealView {
    pub class: &'static str,
    pub text: String,
}

#[derive(Template)]
#[template(path = "console/boards.html")]
pub struct BoardsPage {
    pub chrome: Chrome,
    pub rows: Vec<BoardRow>,
    pub next: Option<String>,
}

/// One member, source and projection side by side.
pub struct MemberRow {
    pub rank: String,
    pub user_id: String,
    pub source_score: String,
    pub source_version: String,
    pub redis_score: String,
    pub redis_version: String,
    pub verdict: String,
    pub verdict_class: &'static str,
}

/// The projection's own page: what readers get from Redis.
pub struct ProjectedRow {
    pub rank: u64,
    pub user_id: String,
    /// The score, or every column's value (`console/columns.rs`).
    pub score: String,
}

/// One searched user.
pub struct UserView {
    pub user_id: String,
    pub source: String,
    pub projection: String,
    pub verdict: String,
    pub verdict_class: &'static str,
    pub why: String,
    pub banned: bool,
}

pub struct Freshness {
    pub lag_ms: String,
    pub pending: String,
    pub parked: String,
    pub projected_through: String,
    pub projection: SealView,
}

pub struct StandingRow {
    pub position: i64,
    pub rank: i64,
    pub user_id: String,
    /// The score, or every column's value (`console/columns.rs`).
    pub score: String,
    pub version: i64,
}

pub struct PeriodView {
    pub current: String,
    pub previous: String,
    pub ends_in: String,
    /// The previous period's close, when it is closed.
    pub closed: Option<ClosedView>,
    /// Why whether the previous period is closed is not known (a store did not answer).
    pub closed_unread: Option<String>,
}

pub struct ClosedView {
    pub period: String,
    pub closed_at: String,
    pub entries: i64,
    pub digest: String,
    pub check: String,
    pub holds: bool,
    pub standings: Vec<StandingRow>,
    /// Why the standings could not be read (a store did not answer): never an empty table.
    pub standings_unread: Option<String>,
}

#[derive(Template)]
#[template(path = "console/board.html")]
pub struct BoardPage {
    pub chrome: Chrome,
    pub board: String,
    /// The board whose entries are shown: the board, or its current period.
    pub target: String,
    pub display_name: String,
    pub definition: String,
    pub freshness: Freshness,
    pub last_pass: String,
    pub entries: u64,
    pub rows: Vec<MemberRow>,
    pub projected: Vec<ProjectedRow>,
    /// Why the projection's page could not be read: never "Nothing in Redis".
    pub projected_unread: Option<String>,
    pub projected_seal: SealView,
    pub query_user: String,
    pub user: Option<UserView>,
    pub periods: Option<PeriodView>,
}

pub struct PassRow {
    pub id: i64,
    pub finished: String,
    pub kind: String,
    pub outcome: String,
    pub boards: String,
    pub checked: String,
    pub drift: String,
    pub classes: String,
    pub repaired: String,
    pub listed: Vec<ListedBoard>,
}

pub struct ListedBoard {
    pub board: String,
    pub summary: String,
}

#[derive(Template)]
#[template(path = "console/drift.html")]
pub struct DriftPage {
    pub chrome: Chrome,
    pub passes: Vec<PassRow>,
}

pub struct ParkedView {
    pub id: i64,
    pub board: String,
    pub user_id: String,
    pub score: i64,
    pub version: i64,
    pub attempts: i32,
    pub error: String,
    pub parked_at: String,
}

#[derive(Template)]
#[template(path = "console/parked.html")]
pub struct ParkedPage {
    pub chrome: Chrome,
    pub rows: Vec<ParkedView>,
}

pub struct AuditRow {
    pub at: String,
    pub actor: String,
    pub action: String,
    pub board: String,
    pub user_id: String,
    pub detail: String,
}

#[derive(Template)]
#[template(path = "console/moderation.html")]
pub struct ModerationPage {
    pub chrome: Chrome,
    pub user_id: String,
    pub board: String,
    pub log: Vec<AuditRow>,
}

/// A held score as the review queue shows it.
pub struct HeldView {
    pub event_id: String,
    /// The board, with the period it was held in (`board~period`).
    pub board: String,
    pub user_id: String,
    /// The command's fields as sent (JSON).
    pub fields: String,
    pub rule: String,
    pub detail: String,
    pub held_at: String,
    pub state: String,
    /// Who decided and when (empty while pending).
    pub decided: String,
    pub reason: String,
}

#[derive(Template)]
#[template(path = "console/reviews.html")]
pub struct ReviewsPage {
    pub chrome: Chrome,
    pub pending: Vec<HeldView>,
    pub decided: Vec<HeldView>,
}

/// A competition as the console lists it, already in words.
pub struct CompetitionView {
    pub id: String,
    pub category: String,
    pub state: String,
    pub window: String,
    /// The run entries go to now, its cohorts (and their size) and the league's tiers.
    pub run: String,
    pub cohorts: String,
    pub entrants: String,
    pub entry: String,
    pub prizes: String,
}

/// A closed run as the console lists it.
pub struct RunView {
    pub competition: String,
    pub run: String,
    pub closed_at: String,
    pub boards: i32,
    pub entries: i64,
    pub moves: i64,
    pub prize_ranges: i32,
    pub digest: String,
    pub previous: String,
}

#[derive(Template)]
#[template(path = "console/competitions.html")]
pub struct CompetitionsPage {
    pub chrome: Chrome,
    pub rows: Vec<CompetitionView>,
    pub runs: Vec<RunView>,
}

/// A webhook subscription as the console lists it, already in words (never its secret).
pub struct WebhookView {
    pub id: String,
    pub url: String,
    pub kinds: String,
    pub boards: String,
    pub lanes: i32,
    pub state: String,
    /// `closed`, or `open until …` / `half_open`.
    pub circuit: String,
    pub failures: i32,
}

#[derive(Template)]
#[template(path = "console/webhooks.html")]
pub struct WebhooksPage {
    pub chrome: Chrome,
    pub subscriptions: Vec<WebhookView>,
}

pub struct WebhookLaneView {
    pub lane: i32,
    pub position: i64,
    /// Positions of the log past the lane's (not all of them its events).
    pub behind: i64,
    pub attempts: i32,
    pub next_attempt_at: String,
    pub last_error: String,
    pub lease_holder: String,
}

pub struct WebhookParkedView {
    pub position: i64,
    pub event_id: String,
    pub kind: String,
    pub board: String,
    pub attempts: i32,
    pub last_error: String,
    pub parked_at: String,
    pub requeued: bool,
}

pub struct WebhookGapView {
    pub lane: i32,
    pub after: i64,
    pub through: i64,
    pub recorded_at: String,
}

#[derive(Template)]
#[template(path = "console/webhook.html")]
pub struct WebhookPage {
    pub chrome: Chrome,
    pub subscription: WebhookView,
    pub head: i64,
    pub lanes: Vec<WebhookLaneView>,
    pub parked: Vec<WebhookParkedView>,
    pub parked_total: i64,
    pub requeued_total: i64,
    pub gaps: Vec<WebhookGapView>,
}
