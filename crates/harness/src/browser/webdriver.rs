//! The WebDriver client: the few W3C commands the browser uses, as JSON over the harness's HTTP
//! client ([`crate::http::request`]), one bounded request per command. (A WebDriver crate would
//! bring second versions of http, thiserror, cookie and the ICU crates into every crate that
//! depends on the harness.)

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

/// How long a new session may take: chromedriver answers once chromium is up, which on a cold
/// CI machine can take several seconds.
pub(super) const NEW_SESSION_LIMIT: Duration = Duration::from_secs(60);

/// How long any other command may take, in total, before it panics as unanswered.
pub(super) const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// Where a session's commands go: chromedriver's address and the session's id.
pub(super) struct Session {
    pub(super) addr: SocketAddr,
    pub(super) id: String,
}

/// Why a WebDriver command failed: chromedriver did not answer (in time, or with JSON), or it
/// answered with a W3C error.
pub(super) enum Failure {
    Transport(String),
    WebDriver { error: String, message: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport(e) => write!(f, "chromedriver did not answer: {e}"),
            Failure::WebDriver { error, message } => write!(f, "{error}: {message}"),
        }
    }
}

impl Session {
    /// Sends the command at `path` under the session and returns its value; panics, naming the
    /// command (`what`), when it fails.
    pub(super) async fn command(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        match self.try_command(method, path, body).await {
            Ok(value) => value,
            Err(e) => panic!("WebDriver command {what} ({method} {path}) failed: {e}"),
        }
    }

    pub(super) async fn try_command(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Failure> {
        let path = format!("/session/{}{path}", self.id);
        exchange(self.addr, method, &path, body, COMMAND_LIMIT).await
    }
}

/// One WebDriver request to chromedriver at `addr`: the JSON `body` (none for GET and DELETE),
/// and the answer's `value`, or the W3C error it carries.
pub(super) async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<Value>,
    limit: Duration,
) -> Result<Value, Failure> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let (status, answer) = crate::http::request(addr, method, path, &[], body, limit)
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?;
    let mut answer: Value = serde_json::from_str(&answer).map_err(|e| {
        let start: String = answer.chars().take(500).collect();
        Failure::Transport(format!("HTTP {status} with no JSON ({e}): {start}"))
    })?;
    let value = answer
        .get_mut("value")
        .map(Value::take)
        .unwrap_or(Value::Null);
    if let Some(error) = value.get("error").and_then(Value::as_str) {
        return Err(Failure::WebDriver {
            error: error.to_owned(),
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
    }
    if !(200..300).contains(&status) {
        return Err(Failure::Transport(format!("HTTP {status}: {answer}")));
    }
    Ok(value)
}

/// The string a command answered with; panics naming the command when it is something else.
pub(super) fn string_of(what: &str, value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => panic!("{what}: chromedriver answered no string: {other}"),
    }
}
