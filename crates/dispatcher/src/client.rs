//! The dispatcher's HTTP client: hyper's HTTP/1.1 connection over TCP, and over rustls for
//! https (the process's one crypto provider, the system's roots or `dispatcher.ca_file`; no
//! OpenSSL). Every step is bounded: the connection (TCP and TLS) by
//! `dispatcher.connect_timeout_ms`, the whole delivery (connection, request, the answer's head
//! and at most [`MAX_ANSWER_BYTES`] of its body) by `dispatcher.request_timeout_ms`.
//!
//! A lane keeps its connection between its deliveries ([`Connection`]); one that the receiver
//! closed meanwhile is noticed before the request goes, or when it fails before any answer,
//! and the request is sent once more on a new connection.
//!
//! The client resolves a receiver's host itself and connects only to public addresses unless
//! `dispatcher.allow_private_addresses` (core's `webhook/address.rs` says why).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use ledgerboard_core::tls;
use ledgerboard_core::webhook::address;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::metrics::Outcome;
use crate::settings::DispatcherSettings;

/// The most of an answer's body read (and thrown away): enough for any acknowledgement; a
/// longer one ends the connection instead of being read.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why a delivery got no 2xx.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("refused: {0}")]
    Refused(String),
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("answered {status}")]
    Rejected { status: u16 },
}

impl SendError {
    pub fn outcome(&self) -> Outcome {
        match self {
            Self::Refused(_) => Outcome::Refused,
            Self::Timeout(_) => Outcome::Timeout,
            Self::Unreachable(_) => Outcome::Unreachable,
            Self::Rejected { .. } => Outcome::Rejected,
        }
    }
}

/// Where a subscription's deliveries go, parsed once per claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    https: bool,
    host: String,
    port: u16,
    /// The `Host` header.
    authority: String,
    /// The request target (origin form).
    path: String,
}

impl Target {
    /// The URL of a subscription, or why it is not delivered to.
    pub fn parse(raw: &str, allow_http: bool) -> Result<Target, SendError> {
        let url = url::Url::parse(raw).map_err(|e| SendError::Refused(format!("url: {e}")))?;
        let https = match url.scheme() {
            "https" => true,
            "http" if allow_http => false,
            "http" => {
                return Err(SendError::Refused(
                    "an http:// URL, and dispatcher.allow_http is false: only https receivers are delivered to".into(),
                ));
            }
            other => return Err(SendError::Refused(format!("scheme {other:?}"))),
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => a.to_string(),
            None => return Err(SendError::Refused("url: no host".into())),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| SendError::Refused("url: no port".into()))?;
        let authority = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => host.clone(),
        };
        let mut path = url.path().to_owned();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Ok(Target {
            https,
            host,
            port,
            authority,
            path,
        })
    }
}

/// An open connection to one target, kept by a lane between its deliveries.
pub struct Connection {
    target: Target,
    sender: SendRequest<Full<Bytes>>,
}

#[derive(Clone)]
pub struct Client {
    /// Why https is not possible, when it is not (no roots): said by each https delivery.
    tls: Result<TlsConnector, String>,
    connect_timeout: Duration,
    request_timeout: Duration,
    pub allow_http: bool,
    allow_private_addresses: bool,
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

impl Client {
    /// The client of `settings`. The trust roots are read once, here: a CA file that cannot be
    /// read is the caller's error; a system without roots leaves https deliveries failing with
    /// a message that says so.
    pub fn new(settings: &DispatcherSettings) -> Result<Client, tls::TlsFileError> {
        let ca_file =
            (!settings.ca_file.is_empty()).then(|| std::path::Path::new(&settings.ca_file));
        let tls = match tls::roots("dispatcher.ca_file", ca_file) {
            Ok(roots) => Ok(tls_connector(roots)?),
            Err(e) if ca_file.is_some() => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "no trust roots: deliveries to https receivers will fail");
                Err(e.to_string())
            }
        };
        Ok(Client {
            tls,
            connect_timeout: settings.connect_timeout(),
            request_timeout: settings.request_timeout(),
            allow_http: settings.allow_http,
            allow_private_addresses: settings.allow_private_addresses,
        })
    }

    /// Sends `body` with `headers` to `target` as a POST, on `conn` when it is a connection to
    /// the same target that is still open, else on a new one left in `conn`. `Ok` is a 2xx
    /// answer's status.
    pub async fn post(
        &self,
        conn: &mut Option<Connection>,
        target: &Target,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<u16, SendError> {
        let deadline = Instant::now() + self.request_timeout;
        let reused = match conn.take() {
            Some(mut c) if c.target == *target => c.sender.ready().await.is_ok().then_some(c),
            _ => None,
        };
        let first_was_reused = reused.is_some();
        let mut c = match reused {
            Some(c) => c,
            None => self.connect(target, deadline).await?,
        };
        let mut result = self.exchange(&mut c, headers, body.clone(), deadline).await;
        // A kept connection the receiver closed just as the request went: once more on a new
        // one (a delivery may repeat; receivers deduplicate by event id).
        if first_was_reused && matches!(result, Err(SendError::Unreachable(_))) {
            c = self.connect(target, deadline).await?;
            result = self.exchange(&mut c, headers, body, deadline).await;
        }
        let (status, keep) = result?;
        if keep {
            *conn = Some(c);
        }
        if (200..300).contains(&status) {
            Ok(status)
        } else {
            Err(SendError::Rejected { status })
        }
    }

    async fn connect(&self, target: &Target, deadline: Instant) -> Result<Connection, SendError> {
        let limit = self
            .connect_timeout
            .min(deadline.saturating_duration_since(Instant::now()));
        let what = format!("{}:{}", target.host, target.port);
        let open = async {
            let tcp = connect_any(&self.addresses(target).await?, &what).await?;
            let _ = tcp.set_nodelay(true);
            let io: Box<dyn Io> = if target.https {
                let connector = self
                    .tls
                    .as_ref()
                    .map_err(|e| SendError::Unreachable(e.clone()))?;
                let name = ServerName::try_from(target.host.clone())
                    .map_err(|e| SendError::Refused(format!("host {}: {e}", target.host)))?;
                let stream = connector
                    .connect(name, tcp)
                    .await
                    .map_err(|e| SendError::Unreachable(format!("TLS with {what}: {e}")))?;
                Box::new(stream)
            } else {
                Box::new(tcp)
            };
            let (sender, connection) = http1::handshake(TokioIo::new(io))
                .await
                .map_err(|e| SendError::Unreachable(format!("HTTP with {what}: {e}")))?;
            // Ends with the connection: when the sender is dropped, or the peer closes it.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok(Connection {
                target: target.clone(),
                sender,
            })
        };
        tokio::time::timeout(limit, open)
            .await
            .map_err(|_| SendError::Timeout(format!("no connection to {what} within {limit:?}")))?
    }

    /// The addresses to connect to for `target`, resolved here (a literal address is its own):
    /// the public ones, or every one with `dispatcher.allow_private_addresses`. A host with
    /// none left is refused, naming the address and its kind.
    async fn addresses(&self, target: &Target) -> Result<Vec<SocketAddr>, SendError> {
        let host = target.host.as_str();
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, target.port))
            .await
            .map_err(|e| SendError::Unreachable(format!("resolve {host}: {e}")))?
            .collect();
        if self.allow_private_addresses {
            return Ok(found);
        }
        // The first address refused, with its kind, for the error when none is left.
        let mut refused = None;
        let public: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| match address::private_kind(a.ip()) {
                None => true,
                Some(kind) => {
                    refused.get_or_insert((a.ip(), kind));
                    false
                }
            })
            .collect();
        match (public.is_empty(), refused) {
            (true, Some((ip, kind))) => Err(SendError::Refused(format!(
                "{host} is at {ip}, a {kind} address, and dispatcher.allow_private_addresses is false: only receivers at public addresses are delivered to",
            ))),
            (true, None) => Err(SendError::Unreachable(format!(
                "resolve {host}: no address"
            ))),
            (false, _) => Ok(public),
        }
    }

    /// One request on `c` and its answer's status; whether the connection may serve the next.
    async fn exchange(
        &self,
        c: &mut Connection,
        headers: &[(&str, &str)],
        body: Bytes,
        deadline: Instant,
    ) -> Result<(u16, bool), SendError> {
        let limit = deadline.saturating_duration_since(Instant::now());
        let mut builder = hyper::Request::post(c.target.path.as_str())
            .header(hyper::header::HOST, c.target.authority.as_str())
            .header(
                hyper::header::USER_AGENT,
                concat!("ledgerboard-dispatcher/", env!("CARGO_PKG_VERSION")),
            );
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .body(Full::new(body))
            .map_err(|e| SendError::Refused(format!("request: {e}")))?;
        let exchange = async {
            let response = c
                .sender
                .send_request(request)
                .await
                .map_err(|e| SendError::Unreachable(format!("sending: {e}")))?;
            let status = response.status().as_u16();
            let closes = response
                .headers()
                .get(hyper::header::CONNECTION)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
            // The answer's body is read (so the connection can serve the next request) up to
            // a bound; past it, or when it fails, the connection is dropped, the status stands.
            let drained = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .is_ok();
            Ok((status, drained && !closes))
        };
        tokio::time::timeout(limit, exchange).await.map_err(|_| {
            SendError::Timeout(format!("no whole answer within {:?}", self.request_timeout))
        })?
    }
}

/// A TCP connection to the first of `addresses` that accepts one, tried in order (as
/// `TcpStream::connect` tries a name's addresses); the last failure when none does.
async fn connect_any(addresses: &[SocketAddr], what: &str) -> Result<TcpStream, SendError> {
    let mut last = None;
    for a in addresses {
        match TcpStream::connect(a).await {
            Ok(tcp) => return Ok(tcp),
            Err(e) => last = Some(e),
        }
    }
    Err(SendError::Unreachable(match last {
        Some(e) => format!("connect {what}: {e}"),
        None => format!("connect {what}: no address"),
    }))
}

fn tls_connector(roots: rustls::RootCertStore) -> Result<TlsConnector, tls::TlsFileError> {
    let mut config = ClientConfig::builder_with_provider(tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls::TlsFileError {
            setting: "TLS".into(),
            reason: e.to_string(),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_parsed_and_http_refused_unless_allowed() {
        let t = Target::parse("https://example.com/hooks?x=1", false).expect("https");
        assert_eq!(
            t,
            Target {
                https: true,
                host: "example.com".into(),
                port: 443,
                authority: "example.com".into(),
                path: "/hooks?x=1".into(),
            }
        );
        let e = Target::parse("http://127.0.0.1:9000/h", false).expect_err("http");
        assert_eq!(e.outcome(), Outcome::Refused);
        assert!(e.to_string().contains("dispatcher.allow_http"), "{e}");
        let t = Target::parse("http://[::1]:9000/h", true).expect("http allowed");
        assert_eq!((t.host.as_str(), t.port), ("::1", 9000));
        assert_eq!(t.authority, "[::1]:9000");
    }
}
