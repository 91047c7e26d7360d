//! Who is calling, and how often: every request passes here before its handler.
//!
//! - `Authorization: Bearer <token>` is checked against `auth.tokens` (by digest, in constant
//!   time). A bad or malformed header is answered 401 at once; no header means anonymous.
//!   The identity goes into the request's extensions for the handlers' scope checks.
//! - A token bucket per token (or, for anonymous calls, per client address) answers 429 with
//!   `Retry-After` past `api.rate_limit_per_s` (bursts up to `api.rate_limit_burst`).

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ledgerboard_core::auth::TokenEntry;
use ledgerboard_core::config::ReadAccess;

use crate::error::ApiError;
use crate::state::AppState;

/// The caller, as the guard established it.
#[derive(Debug, Clone)]
pub enum Identity {
    Anonymous,
    Token(Arc<TokenEntry>),
}

/// Keys seen by the rate limiter are forgotten after this many requests' worth of sweeps, so
/// a flood of addresses cannot grow its memory without bound.
const SWEEP_EVERY: u64 = 10_000;

pub struct Limiter {
    buckets: DefaultKeyedRateLimiter<String>,
    seen: std::sync::atomic::AtomicU64,
}

impl Limiter {
    /// None when `per_s` is 0 (no limit).
    pub fn new(per_s: u32, burst: u32) -> Option<Limiter> {
        let per_s = NonZeroU32::new(per_s)?;
        let burst = NonZeroU32::new(burst).unwrap_or(per_s);
        Some(Limiter {
            buckets: RateLimiter::keyed(Quota::per_second(per_s).allow_burst(burst)),
            seen: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Ok, or how long to wait.
    fn check(&self, key: &str) -> Result<(), std::time::Duration> {
        if self
            .seen
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            self.buckets.retain_recent();
        }
        self.buckets
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

pub async fn guard(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let identity = match identify(&state, &req) {
        Ok(identity) => identity,
        Err(e) => return e.into_response(),
    };
    if let Some(limiter) = &state.limiter {
        let key = match &identity {
            Identity::Token(t) => format!("token:{}", t.name),
            Identity::Anonymous => req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map_or_else(
                    || "address:unknown".to_owned(),
                    |c| format!("address:{}", c.0.ip()),
                ),
        };
        if let Err(wait) = limiter.check(&key) {
            return ApiError::RateLimited(wait).into_response();
        }
    }
    req.extensions_mut().insert(identity);
    next.run(req).await
}

fn identify(state: &AppState, req: &Request) -> Result<Identity, ApiError> {
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
    state
        .tokens
        .authenticate(token)
        .map(|entry| Identity::Token(Arc::new(entry.clone())))
        .ok_or(ApiError::Unauthenticated("the token is not valid"))
}

impl Identity {
    /// A score command on `board` needs a token that may write there.
    pub fn require_write(&self, board: &ledgerboard_core::domain::BoardId) -> Result<(), ApiError> {
        match self {
            Identity::Anonymous => Err(ApiError::Unauthenticated(
                "score commands need a bearer token",
            )),
            Identity::Token(t) if t.may_write(board) => Ok(()),
            Identity::Token(_) => Err(ApiError::Forbidden(
                "this token may not write to this board",
            )),
        }
    }
}

/// Read routes, when `auth.reads = token`: any valid token may read.
pub async fn require_read(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if state.reads == ReadAccess::Token {
        match req.extensions().get::<Identity>() {
            Some(Identity::Token(t)) if t.may_read() => {}
            Some(Identity::Token(_)) => {
                return ApiError::Forbidden("this token may not read").into_response();
            }
            _ => {
                return ApiError::Unauthenticated("reads need a bearer token").into_response();
            }
        }
    }
    next.run(req).await
}
