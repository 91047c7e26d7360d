//! Who is calling, and how often: every request passes here before its handler.
//!
//! - `Authorization: Bearer <token>` is checked against `auth.tokens` (by digest, in constant
//!   time), or, when it is a JWT, verified as a player token with the keys of
//!   `auth.player_keys` (core's `auth/player.rs`). A bad or malformed header is answered 401
//!   at once; no header means anonymous. The identity goes into the request's extensions for
//!   the handlers' scope checks.
//! - A token bucket per player (a player token's `sub`, at `api.player_rate_limit_per_min`),
//!   per token (or, for anonymous calls, per client: its address, an IPv6 /64,
//!   named by `X-Forwarded-For` / `Forwarded` only when the peer is one of
//!   `api.trusted_proxies`; see `crate::client`) answers 429 with `Retry-After` past
//!   `api.rate_limit_per_s` (bursts up to `api.rate_limit_burst`); see `rate_limit`.
//!
//! The middleware reads only [`Auth`], a substate of the router's state (axum's `FromRef`,
//! implemented where the state is defined), so this module knows nothing of the state.

mod rate_limit;
mod verified;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::auth::player::{Player, PlayerKeys};
use ledgerboard_core::auth::{TokenEntry, TokenTable};
use ledgerboard_core::model::{BoardId, UserId};

pub use self::rate_limit::Limiter;
use crate::client::{ClientKey, TrustedProxies};
use crate::error::ApiError;
use crate::settings::{ReadAccess, Sections};

/// The caller, as the guard established it.
#[derive(Debug, Clone)]
pub enum Identity {
    Anonymous,
    Token(Arc<TokenEntry>),
    /// A player token: one player, writing only its own user id on the boards it names.
    Player(Arc<Player>),
}

/// What the guard reads: the tokens, whether reads need one, and the rate limit.
#[derive(Clone)]
pub struct Auth {
    /// The tokens of `auth.tokens`.
    pub tokens: Arc<TokenTable>,
    /// The keys of `auth.player_keys`.
    pub players: Arc<PlayerKeys>,
    /// Player tokens verified already, until they expire.
    verified: Arc<verified::Verified>,
    pub reads: ReadAccess,
    /// None when `api.rate_limit_per_s` is 0.
    pub limiter: Option<Arc<Limiter>>,
    /// Per player, instead of `limiter`; None when `api.player_rate_limit_per_min` is 0.
    pub player_limiter: Option<Arc<Limiter>>,
    /// The proxies whose forwarding headers name the client (`api.trusted_proxies`).
    pub trusted_proxies: Arc<TrustedProxies>,
}

impl Auth {
    /// The settings were validated when loaded, so `auth.tokens` parses; should it not, no
    /// token is accepted (every write is refused) rather than any.
    pub fn new(settings: &Sections) -> Self {
        Self {
            tokens: Arc::new(TokenTable::parse(&settings.auth.tokens).unwrap_or_default()),
            // Validated when loaded too; should they not parse, no player token is accepted.
            players: Arc::new(
                PlayerKeys::parse(&settings.auth.player_keys, &settings.auth.player_audience)
                    .unwrap_or_default(),
            ),
            verified: Arc::default(),
            reads: settings.auth.reads,
            limiter: Limiter::new(settings.api.rate_limit_per_s, settings.api.rate_limit_burst)
                .map(Arc::new),
            player_limiter: Limiter::per_minute(
                settings.api.player_rate_limit_per_min,
                settings.api.player_rate_limit_burst,
            )
            .map(Arc::new),
            // Validated when loaded; should it not parse, no proxy is trusted.
            trusted_proxies: Arc::new(settings.api.trusted_proxies().unwrap_or_default()),
        }
    }
}

pub async fn guard(State(auth): State<Auth>, mut req: Request, next: Next) -> Response {
    let identity = match identify(&auth, &req) {
        Ok(identity) => identity,
        Err(e) => return e.into_response(),
    };
    // A player is one game client: its own bucket, by `sub` whichever key minted its token,
    // at the players' rate; everyone else by token or address.
    let limited = match &identity {
        Identity::Player(p) => auth
            .player_limiter
            .as_ref()
            .map(|l| (l, format!("player:{}", p.user.as_str()))),
        Identity::Token(t) => auth
            .limiter
            .as_ref()
            .map(|l| (l, format!("token:{}", t.name))),
        Identity::Anonymous => auth.limiter.as_ref().map(|l| {
            let key = req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map_or_else(
                    || "address:unknown".to_owned(),
                    |c| {
                        let client = auth.trusted_proxies.client(c.0.ip(), req.headers());
                        format!("address:{}", ClientKey::of(client))
                    },
                );
            (l, key)
        }),
    };
    if let Some((limiter, key)) = limited
        && let Err(wait) = limiter.check(&key)
    {
        return ApiError::RateLimited(wait).into_response();
    }
    req.extensions_mut().insert(identity);
    next.run(req).await
}

fn identify(auth: &Auth, req: &Request) -> Result<Identity, ApiError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(Identity::Anonymous);
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(ApiError::Unauthenticated(
            "the Authorization header must be `Bearer <token>`",
        ))?;
    auth.token(token)
}

impl Auth {
    /// The identity `token` stands for: a bearer header's, or the console's session cookie's.
    /// A JWT (three base64url parts, the header's JSON starting `{"`) is a player token;
    /// anything else is looked up in `auth.tokens`.
    pub fn token(&self, token: &str) -> Result<Identity, ApiError> {
        if token.starts_with("eyJ") && token.bytes().filter(|b| *b == b'.').count() == 2 {
            return self
                .verified
                .get_or_verify(token, || self.players.verify(token))
                .map(Identity::Player)
                .map_err(ApiError::PlayerToken);
        }
        self.tokens
            .authenticate(token)
            .map(|entry| Identity::Token(Arc::new(entry.clone())))
            .ok_or(ApiError::Unauthenticated("the token is not valid"))
    }
}

/// What a player token may not do beyond its own scores and entries.
fn player_scope(what: &str) -> ApiError {
    ApiError::PlayerDenied(
        "player_scope",
        format!("a player token may not {what}: it posts and reads its own scores only"),
    )
}

impl Identity {
    /// A score command on `board` needs a token that may write there. A player token must
    /// name the board; whether the board takes players' scores is its write policy's to say
    /// (`board::submit`), and whose score it is the body's ([`Identity::require_user`]).
    pub fn require_write(&self, board: &BoardId) -> Result<(), ApiError> {
        match self {
            Identity::Anonymous => Err(ApiError::Unauthenticated(
                "score commands need a bearer token",
            )),
            Identity::Token(t) if t.may_write(board) => Ok(()),
            Identity::Token(_) => Err(ApiError::Forbidden(
                "this token may not write to this board",
            )),
            Identity::Player(p) if p.may_use(board) => Ok(()),
            Identity::Player(_) => Err(ApiError::PlayerDenied(
                "player_board",
                format!("this player token does not name board {board}"),
            )),
        }
    }

    /// A player token writes its own user id only; a service token any.
    pub fn require_user(&self, user_id: &str) -> Result<(), ApiError> {
        match self {
            Identity::Player(p) if p.user.as_str() != user_id => Err(ApiError::PlayerDenied(
                "player_user",
                "a player token posts scores for its own user id (its sub) only".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The player a request acts for (an attempt's start, a competition's entry): the body's
    /// `user_id`, or, left out, a player token's own (a service token must name one); a player
    /// token may name only itself.
    pub fn acting_user(&self, given: Option<String>) -> Result<UserId, ApiError> {
        let user = match (given, self) {
            (Some(u), _) => u,
            (None, Identity::Player(p)) => p.user.as_str().to_owned(),
            (None, _) => {
                return Err(ApiError::MalformedBody(
                    "a service token names the player: user_id is required".into(),
                ));
            }
        };
        self.require_user(&user)?;
        Ok(UserId::parse(&user)?)
    }

    /// How `board::submit` judges the command against the board's write policy.
    pub fn writer(&self) -> ledgerboard_core::board::Writer {
        match self {
            Identity::Player(_) => ledgerboard_core::board::Writer::Player,
            _ => ledgerboard_core::board::Writer::Service,
        }
    }
}

impl Identity {
    /// A moderation command (removal, ban, unban, erasure) needs a token with the `moderate`
    /// or the `admin` scope.
    pub fn require_moderator(&self) -> Result<(), ApiError> {
        match self {
            Identity::Anonymous => Err(ApiError::Unauthenticated(
                "moderation commands need a bearer token",
            )),
            Identity::Token(t) if t.may_moderate() => Ok(()),
            Identity::Token(_) => Err(ApiError::Forbidden(
                "moderation commands need the moderate or admin scope",
            )),
            Identity::Player(_) => Err(player_scope("moderate")),
        }
    }

    /// The event feed (`GET /v1/events`) needs a token with the `events` or the `admin` scope,
    /// whatever `auth.reads` says: it tells what happens on every board, user ids and
    /// moderation reasons included.
    pub fn require_events(&self) -> Result<(), ApiError> {
        match self {
            Identity::Anonymous => Err(ApiError::Unauthenticated(
                "the event feed needs a bearer token",
            )),
            Identity::Token(t) if t.may_read_events() => Ok(()),
            Identity::Token(_) => Err(ApiError::Forbidden(
                "the event feed needs the events or admin scope",
            )),
            Identity::Player(_) => Err(player_scope("read the event feed")),
        }
    }

    /// The token's name (the actor of an audit row); empty for an anonymous caller.
    pub fn name(&self) -> &str {
        match self {
            Identity::Anonymous => "",
            Identity::Token(t) => &t.name,
            Identity::Player(p) => p.user.as_str(),
        }
    }

    /// Declaring or changing a board's definition needs a token with the `admin` scope.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        match self {
            Identity::Anonymous => Err(ApiError::Unauthenticated(
                "board definitions are changed with a bearer token",
            )),
            Identity::Token(t) if t.may_administer() => Ok(()),
            Identity::Token(_) => Err(ApiError::Forbidden(
                "changing board definitions needs the admin scope",
            )),
            Identity::Player(_) => Err(player_scope("change board definitions")),
        }
    }
}

/// Read routes, when `auth.reads = token`: any valid service token may read; a player token
/// its own entry on a board it names (`/v1/boards/{board}/users/{its user id}`).
pub async fn require_read(State(auth): State<Auth>, req: Request, next: Next) -> Response {
    if auth.reads == ReadAccess::Token {
        match req.extensions().get::<Identity>() {
            Some(Identity::Token(t)) if t.may_read() => {}
            Some(Identity::Token(_)) => {
                return ApiError::Forbidden("this token may not read").into_response();
            }
            Some(Identity::Player(p)) if own_entry(p, req.uri().path()) => {}
            Some(Identity::Player(_)) => {
                return ApiError::PlayerDenied(
                    "player_scope",
                    "a player token reads its own entry only (/v1/boards/{board}/users/{its user id}, or /v1/boards/{board}/live, on a board it names) while auth.reads is token".into(),
                )
                .into_response();
            }
            _ => {
                return ApiError::Unauthenticated("reads need a bearer token").into_response();
            }
        }
    }
    next.run(req).await
}

/// Whether `path` is `/v1/boards/{board}/users/{user}` for a board the player names and its
/// own user id (percent-decoded, as the route decodes it), or `/v1/boards/{board}/live` of a
/// board it names (whose messages carry the player's own entry).
fn own_entry(player: &Player, path: &str) -> bool {
    let mut parts = path.split('/');
    match (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) {
        (Some(""), Some("v1"), Some("boards"), Some(board), Some("live"), None, None) => {
            BoardId::parse(board).is_ok_and(|b| player.may_use(&b))
        }
        (Some(""), Some("v1"), Some("boards"), Some(board), Some("users"), Some(user), None) => {
            let user = percent_encoding::percent_decode_str(user).decode_utf8();
            BoardId::parse(board).is_ok_and(|b| player.may_use(&b))
                && user.is_ok_and(|u| u == player.user.as_str())
        }
        _ => false,
    }
}
