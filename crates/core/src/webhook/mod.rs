//! Signed webhooks (issue 40): subscriptions to the event log (`events/`), the lanes the
//! dispatcher (`crates/dispatcher`) delivers them by, parked deliveries and the signature.
//!
//! - [`subscription`]: create (the secret generated unless given, shown once; the lanes start at
//!   the log's head), list, get with each lane's progress, update, delete.
//! - [`lane`]: the dispatcher's side. A subscription's events go by lanes (`lanes` of them,
//!   fixed at creation); a board always by the same one (`lb_webhook_lane`, migration V20), so
//!   a board's events arrive in order while other boards' go in parallel. A dispatcher claims
//!   lanes by lease (no transaction open across a delivery), reads a lane's next events within
//!   a bounded window of positions, advances after a success (fenced by its lease), backs off
//!   after a failure and parks the event after `max_attempts`; the circuit of a subscription
//!   opens after consecutive failures.
//! - [`parked`]: parked deliveries, their requeue and the requeued deliveries' claim.
//! - [`signature`]: `Ledgerboard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
//!   "{t}.{body}">` and [`signature::verify`], the receiver's check.
//! - [`status`]: what the dispatcher's gauges sample.
//! - [`address`]: which addresses a receiver may be at (the dispatcher judges every address it
//!   resolves; a URL naming a non-public one outright is refused when it is registered).
//!
//! Above `events` (it renders events with `events::render`), below `daemon`.

pub mod address;
pub mod lane;
pub mod parked;
pub mod signature;
pub mod status;
pub mod subscription;

use serde::Serialize;

use crate::db::StoreError;
use crate::events::{EventsError, Kind};
use crate::model::BoardId;

pub use subscription::{create, delete, get, list, update};

/// Most lanes of one subscription.
pub const MAX_LANES: i32 = 64;
/// Most boards one subscription names.
pub const MAX_BOARDS: usize = 100;
/// Longest URL accepted.
pub const MAX_URL_LEN: usize = 2_048;
/// A given secret's bounds, in bytes of printable ASCII.
pub const MIN_SECRET_LEN: usize = 16;
pub const MAX_SECRET_LEN: usize = 256;
/// Most subscriptions one page lists.
pub const MAX_PAGE: i64 = 1_000;

/// A subscription as an operator reads it (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Subscription {
    pub id: String,
    pub url: String,
    /// Empty: every kind.
    pub kinds: Vec<String>,
    /// Empty: every board.
    pub boards: Vec<String>,
    /// Concurrency: each board's events go in order by one of these lanes.
    pub lanes: i32,
    pub enabled: bool,
    /// The log's last position at creation: events after it are delivered.
    pub start_position: i64,
    /// Consecutive failed deliveries.
    pub failures: i32,
    /// `closed`, `open` (no delivery until `circuit_open_until`) or `half_open` (the next
    /// delivery is a trial).
    pub circuit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub circuit_open_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// What creation answers: the subscription and its secret, which is never shown again.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Created {
    #[serde(flatten)]
    pub subscription: Subscription,
    /// The HMAC key of the signatures: keep it with the receiver.
    pub secret: String,
}

/// One lane's progress.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LaneStatus {
    pub lane: i32,
    /// Every event of this lane at or below it was delivered, parked or lost.
    pub position: i64,
    /// Failed attempts at its next event.
    pub attempts: i32,
    pub next_attempt_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The dispatcher delivering it now, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_holder: Option<String>,
}

/// Positions retention deleted before a lane delivered them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Gap {
    pub lane: i32,
    /// Events after this position …
    pub after_position: i64,
    /// … through this one were deleted before this lane read them.
    pub through_position: i64,
    pub recorded_at: String,
}

/// A subscription with where its deliveries stand.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Detail {
    #[serde(flatten)]
    pub subscription: Subscription,
    /// The log's last position now.
    pub head: i64,
    pub lane_status: Vec<LaneStatus>,
    /// Parked deliveries, and how many of them are requeued.
    pub parked: i64,
    pub requeued: i64,
    /// Retention's losses, newest first (at most 100).
    pub gaps: Vec<Gap>,
}

/// What a new subscription asks for.
#[derive(Debug, Clone, Default)]
pub struct NewSubscription {
    pub url: String,
    pub kinds: Vec<String>,
    pub boards: Vec<String>,
    /// Generated when absent.
    pub secret: Option<String>,
    /// Default 1.
    pub lanes: Option<i32>,
    /// Default true.
    pub enabled: Option<bool>,
}

/// A change of a subscription: what is `None` stays.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub url: Option<String>,
    pub kinds: Option<Vec<String>>,
    pub boards: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// Which receiver URLs are accepted beyond public `https://` ones. Production accepts neither
/// ([`UrlRules::STRICT`]); local stacks and tests, whose receivers listen on loopback, both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UrlRules {
    /// `http://` URLs (the api's `api.webhook_allow_http`, lbctl's `--allow-http`).
    pub allow_http: bool,
    /// URLs that name a loopback, private, link-local or other non-public address outright
    /// (the api's `api.webhook_allow_private_addresses`, lbctl's `--allow-private-addresses`).
    pub allow_private_addresses: bool,
}

impl UrlRules {
    /// Public `https://` receivers only.
    pub const STRICT: Self = Self {
        allow_http: false,
        allow_private_addresses: false,
    };
    /// `http://` and non-public addresses too: local stacks, tests and the bench.
    pub const LOCAL: Self = Self {
        allow_http: true,
        allow_private_addresses: true,
    };
}

/// Why a subscription was not created or changed. `code()` is the api's.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("url: {0}")]
    InvalidUrl(String),
    #[error(
        "url: http:// is refused (only https:// receivers are delivered to; a local stack allows http with api.webhook_allow_http, lbctl with --allow-http)"
    )]
    HttpRefused,
    #[error(
        "url: {host} is a {kind} address: only receivers at public addresses are delivered to (a local stack allows others with api.webhook_allow_private_addresses, lbctl with --allow-private-addresses)"
    )]
    PrivateAddress { host: String, kind: &'static str },
    #[error(transparent)]
    InvalidKind(EventsError),
    #[error("boards: {0}")]
    InvalidBoards(String),
    #[error("lanes must be between 1 and {MAX_LANES}")]
    InvalidLanes,
    #[error(
        "secret must be {MIN_SECRET_LEN} to {MAX_SECRET_LEN} printable ASCII characters without spaces"
    )]
    InvalidSecret,
    #[error("no such webhook subscription")]
    Unknown,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl WebhookError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidUrl(_) => "invalid_url",
            Self::HttpRefused => "webhook_http_refused",
            Self::PrivateAddress { .. } => "webhook_private_address",
            Self::InvalidKind(_) => "invalid_kind",
            Self::InvalidBoards(_) => "invalid_boards",
            Self::InvalidLanes => "invalid_lanes",
            Self::InvalidSecret => "invalid_secret",
            Self::Unknown => "webhook_unknown",
            Self::Store(_) => "store",
        }
    }
}

impl From<tokio_postgres::Error> for WebhookError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(StoreError::from(e))
    }
}

/// A receiver's URL: absolute, `https` (or `http` when `rules` allow it), with a host that
/// does not name a non-public address outright (unless `rules` allow it: [`address::named`]),
/// no credentials and no fragment. Credentials are refused because listings show the URL; the
/// signature is what authenticates a delivery. A host name is judged again by the dispatcher,
/// against the addresses it resolves to when it delivers.
pub fn check_url(raw: &str, rules: UrlRules) -> Result<url::Url, WebhookError> {
    if raw.len() > MAX_URL_LEN {
        return Err(WebhookError::InvalidUrl(format!(
            "longer than {MAX_URL_LEN} bytes"
        )));
    }
    let url = url::Url::parse(raw).map_err(|e| WebhookError::InvalidUrl(unparsable(e).into()))?;
    match url.scheme() {
        "https" => {}
        "http" if rules.allow_http => {}
        "http" => return Err(WebhookError::HttpRefused),
        other => {
            return Err(WebhookError::InvalidUrl(format!(
                "scheme {other:?}: only https (and http where allowed)"
            )));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(WebhookError::InvalidUrl("no host".into()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(WebhookError::InvalidUrl(
            "credentials in the URL are refused (listings show it): authenticate deliveries by their signature".into(),
        ));
    }
    if url.fragment().is_some() {
        return Err(WebhookError::InvalidUrl("a fragment is never sent".into()));
    }
    if !rules.allow_private_addresses
        && let Some((host, kind)) = address::named(&url)
    {
        return Err(WebhookError::PrivateAddress { host, kind });
    }
    Ok(url)
}

/// Why a URL did not parse, in this service's words rather than the URL crate's.
fn unparsable(e: url::ParseError) -> &'static str {
    use url::ParseError as P;
    match e {
        P::RelativeUrlWithoutBase | P::RelativeUrlWithCannotBeABaseBase => {
            "not an absolute URL (https://host/path)"
        }
        P::EmptyHost => "no host",
        P::InvalidPort => "the port is not a number from 0 to 65535",
        P::InvalidIpv4Address => "the host is not a valid IPv4 address",
        P::InvalidIpv6Address => "the host is not a valid IPv6 address",
        P::InvalidDomainCharacter | P::IdnaError => "the host is not a valid domain name",
        _ => "not a URL",
    }
}

/// Kind names, each known ([`Kind::parse`]), without repeats, in the order given.
pub fn check_kinds(kinds: &[String]) -> Result<Vec<String>, WebhookError> {
    let mut out: Vec<String> = Vec::with_capacity(kinds.len());
    for k in kinds {
        let kind = Kind::parse(k.trim())
            .ok_or_else(|| WebhookError::InvalidKind(EventsError::UnknownKind(k.clone())))?;
        if !out.iter().any(|o| o == kind.as_str()) {
            out.push(kind.as_str().to_owned());
        }
    }
    Ok(out)
}

/// Board ids (declared boards, never a period's), without repeats, at most [`MAX_BOARDS`].
pub fn check_boards(boards: &[String]) -> Result<Vec<String>, WebhookError> {
    if boards.len() > MAX_BOARDS {
        return Err(WebhookError::InvalidBoards(format!("at most {MAX_BOARDS}")));
    }
    let mut out: Vec<String> = Vec::with_capacity(boards.len());
    for b in boards {
        let id = BoardId::parse(b.trim())
            .map_err(|e| WebhookError::InvalidBoards(format!("{b:?}: {e}")))?;
        if !out.iter().any(|o| o == id.as_str()) {
            out.push(id.as_str().to_owned());
        }
    }
    Ok(out)
}

/// A secret given by the operator: printable ASCII without spaces, of a length a guess cannot
/// reach.
pub fn check_secret(secret: &str) -> Result<(), WebhookError> {
    let ok = (MIN_SECRET_LEN..=MAX_SECRET_LEN).contains(&secret.len())
        && secret.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(WebhookError::InvalidSecret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_with_a_host_and_no_credentials() {
        assert!(check_url("https://example.com/hook", UrlRules::STRICT).is_ok());
        assert!(matches!(
            check_url("http://example.com/hook", UrlRules::STRICT),
            Err(WebhookError::HttpRefused)
        ));
        assert!(check_url("http://127.0.0.1:9/hook", UrlRules::LOCAL).is_ok());
        for (bad, why) in [
            ("ftp://example.com/", "scheme \"ftp\""),
            ("https://user:pw@example.com/", "credentials"),
            ("https://example.com/#x", "fragment"),
            ("not a url", "url: not an absolute URL (https://host/path)"),
            ("https://", "url: no host"),
            (
                "https://example.com:99999/",
                "url: the port is not a number",
            ),
            ("https://[::1/", "url: the host is not a valid IPv6 address"),
            (
                "https://exa mple.com/",
                "url: the host is not a valid domain name",
            ),
        ] {
            let e = check_url(bad, UrlRules::LOCAL).expect_err(bad);
            assert_eq!(e.code(), "invalid_url", "{bad}: {e}");
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_url_naming_a_non_public_address_is_refused_unless_allowed() {
        let https_only = UrlRules {
            allow_http: true,
            ..UrlRules::STRICT
        };
        for (url, host, kind) in [
            ("https://127.0.0.1/h", "127.0.0.1", "loopback"),
            // The URL parser's spellings of one address: decimal and hexadecimal.
            ("https://2130706433/h", "127.0.0.1", "loopback"),
            ("https://0x7f.1/h", "127.0.0.1", "loopback"),
            (
                "https://169.254.169.254/latest/meta-data",
                "169.254.169.254",
                "link-local",
            ),
            ("http://10.1.2.3:8080/h", "10.1.2.3", "private"),
            ("https://[::1]/h", "::1", "loopback"),
            (
                "https://[::ffff:192.168.0.9]/h",
                "::ffff:192.168.0.9",
                "private",
            ),
            ("https://LocalHost./h", "localhost", "loopback"),
            ("https://api.localhost/h", "api.localhost", "loopback"),
        ] {
            match check_url(url, https_only) {
                Err(WebhookError::PrivateAddress { host: h, kind: k }) => {
                    assert_eq!((h.as_str(), k), (host, kind), "{url}");
                }
                other => panic!("{url}: {other:?}"),
            }
            assert!(check_url(url, UrlRules::LOCAL).is_ok(), "{url}");
        }
        // Names are the dispatcher's to judge when it delivers, as are public addresses.
        for url in [
            "https://8.8.8.8/h",
            "https://[2606:4700::1111]/h",
            "https://localhost.example/h",
        ] {
            assert!(check_url(url, UrlRules::STRICT).is_ok(), "{url}");
        }
        let e = check_url("https://10.0.0.1/", UrlRules::STRICT).expect_err("private");
        assert_eq!(e.code(), "webhook_private_address");
        assert!(
            e.to_string()
                .contains("api.webhook_allow_private_addresses"),
            "{e}"
        );
    }

    #[test]
    fn kinds_and_boards_are_known_and_unique() {
        let kinds = check_kinds(&["score.accepted".into(), "score.accepted".into()]).expect("ok");
        assert_eq!(kinds, vec!["score.accepted"]);
        let e = check_kinds(&["score.maybe".into()]).expect_err("unknown");
        assert_eq!(e.code(), "invalid_kind");
        assert_eq!(
            check_boards(&["a".into(), "a".into(), "b".into()]).expect("ok"),
            vec!["a", "b"]
        );
        assert_eq!(
            check_boards(&["a~2026".into()]).expect_err("period").code(),
            "invalid_boards"
        );
    }

    #[test]
    fn a_given_secret_is_long_and_printable() {
        assert!(check_secret("0123456789abcdef").is_ok());
        assert!(check_secret("short").is_err());
        assert!(check_secret("0123456789 abcdef").is_err());
    }
}
