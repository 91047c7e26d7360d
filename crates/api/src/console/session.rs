//! The console's session: the admin token in a cookie, and a CSRF token derived from it.
//!
//! The cookie holds the token itself (HttpOnly: no script reads it; SameSite=Strict: no other
//! site's page sends it; Secure when the request came over TLS through a trusted proxy; scoped
//! to `/console`). Nothing is kept on the server, so every api replica accepts the session and
//! a token removed from `auth.tokens` ends its sessions at once. Every action also carries the
//! CSRF token (`core::auth::csrf_token` of the cookie's token) in its form, and a request whose
//! `Origin` names another host is refused, so a page elsewhere cannot act as the operator even
//! in a browser that ignores SameSite.

use std::net::SocketAddr;

use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Request, header};
use ledgerboard_core::auth::{csrf_token, same_secret};

use crate::auth::Identity;
use crate::error::ApiError;
use crate::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "lb_console";
/// A session lasts a working day; the operator logs in again after.
const MAX_AGE_S: u64 = 8 * 3600;

/// An operator with the admin scope, and the CSRF token their forms carry.
#[derive(Clone)]
pub struct Session {
    pub identity: Identity,
    pub csrf: String,
}

impl Session {
    pub fn actor(&self) -> &str {
        self.identity.name()
    }
}

/// Why a request has no session.
pub enum Refused {
    /// No cookie, or a token that is not (or no longer) valid: the login page.
    Login,
    /// A valid token without the admin scope.
    Forbidden(ApiError),
}

/// The session of a request, from its cookie.
pub fn session(state: &AppState, headers: &HeaderMap) -> Result<Session, Refused> {
    let token = cookie(headers, COOKIE).ok_or(Refused::Login)?;
    let identity = state.auth.token(token).map_err(|_| Refused::Login)?;
    identity.require_admin().map_err(|_| {
        Refused::Forbidden(ApiError::Forbidden("the console needs the admin scope"))
    })?;
    Ok(Session {
        csrf: csrf_token(token),
        identity,
    })
}

/// An action's checks beyond the session: its form's CSRF token, and an `Origin`, when the
/// browser sends one, naming this host.
pub fn check_action(session: &Session, headers: &HeaderMap, csrf: &str) -> Result<(), ApiError> {
    if !same_secret(csrf, &session.csrf) {
        return Err(ApiError::Forbidden(
            "the form's CSRF token does not match this session: reload the page and try again",
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest);
        if host.is_none() || origin_host != host {
            return Err(ApiError::Forbidden(
                "the request came from a page of another origin",
            ));
        }
    }
    Ok(())
}

/// The value of cookie `name`, from every `Cookie` header of the request.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// Whether the request reached the api over TLS: the api serves plain HTTP, behind a proxy
/// or an ingress that ends TLS, so only a trusted proxy's `X-Forwarded-Proto: https` says so.
pub fn over_tls<B>(state: &AppState, req: &Request<B>) -> bool {
    let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>() else {
        return false;
    };
    state.auth.trusted_proxies.contains(peer.ip())
        && req
            .headers()
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// The `Set-Cookie` that starts a session; None for a token a cookie cannot hold as it is
/// (tokens made by `lbctl token new` always can).
pub fn start(token: &str, secure: bool) -> Option<HeaderValue> {
    let fits = token
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b',' | b';' | b'\\'));
    if !fits {
        return None;
    }
    HeaderValue::from_str(&format!(
        "{COOKIE}={token}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={MAX_AGE_S}{}",
        if secure { "; Secure" } else { "" }
    ))
    .ok()
}

/// The `Set-Cookie` that ends the session.
pub fn end(secure: bool) -> HeaderValue {
    HeaderValue::from_static(if secure {
        "lb_console=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0; Secure"
    } else {
        "lb_console=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0"
    })
}
