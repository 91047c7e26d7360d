//! The api's server loop: what a connection may hold and for how long, and the drain.
//!
//! - At most `api.max_connections` connections at once (more clients wait in the listen
//!   backlog), and at most `api.max_connections_per_client` from one client address (an IPv6
//!   /64; peers in `api.trusted_proxies` are not capped, since every client behind them shares
//!   their address): one client cannot take every connection.
//! - A client that does not send its request head within `api.header_timeout_ms` is
//!   disconnected, and the head may fill at most `api.max_header_bytes` (431, then closed).
//! - A client that takes no bytes of its response for `api.write_timeout_ms` is disconnected
//!   ([`WriteTimeout`]): a reader that never reads cannot pin a connection, its buffers and its
//!   task forever.
//! - After SIGTERM the api drains ([`drain_after`]): `/readyz` answers 503 at once while this
//!   loop keeps accepting for `api.drain_delay_ms`, so load balancers stop sending before the
//!   port closes; then in-flight requests get `shutdown.grace_ms`.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use crate::client::{ClientKey, TrustedProxies};
use crate::metrics::{ConnectionClosed, metrics};
use crate::settings::ApiSettings;
use ledgerboard_core::telemetry::metrics::Label;

/// A token that fires `delay` after `shutdown` does: when the api stops accepting. Between the
/// two the api serves as before while its `/readyz` (watching `shutdown`) answers draining.
pub fn drain_after(shutdown: CancellationToken, delay: Duration) -> CancellationToken {
    let stop_accepting = CancellationToken::new();
    let stop = stop_accepting.clone();
    tokio::spawn(async move {
        shutdown.cancelled().await;
        if !delay.is_zero() {
            tracing::info!(?delay, "draining: not ready, still serving");
            tokio::time::sleep(delay).await;
        }
        stop.cancel();
    });
    stop_accepting
}

/// Serves until `stop_accepting` fires, then stops accepting and lets in-flight requests
/// finish for at most `grace` (see the module's text for the bounds on each connection).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    settings: &ApiSettings,
    stop_accepting: CancellationToken,
    grace: Duration,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(settings.max_connections.get()));
    let per_client = Arc::new(PerClient {
        max: settings.max_connections_per_client.get(),
        open: Mutex::default(),
    });
    // Validated when loaded; should it not parse, no proxy is exempt from the cap.
    let trusted = settings.trusted_proxies().unwrap_or_default();
    let write_timeout = settings.write_timeout();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(settings.header_timeout())
        .max_buf_size(settings.max_header_bytes.get());
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = stop_accepting.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, say: wait a little instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop_accepting.cancelled() => break,
        };
        let slot = match client_slot(&per_client, &trusted, peer) {
            Some(slot) => slot,
            None => {
                tracing::debug!(%peer, "connection refused: too many from this client");
                metrics()
                    .connections_closed
                    .add(1, &[ConnectionClosed::PerClientCap.key_value()]);
                // Dropping the stream closes it; the permit goes back with it.
                continue;
            }
        };
        let service = tower::ServiceExt::map_request(app.clone(), move |mut req: Request<_>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            req
        });
        let connection = http.serve_connection(
            hyper_util::rt::TokioIo::new(WriteTimeout::new(stream, write_timeout)),
            hyper_util::service::TowerToHyperService::new(service),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away or times out ends its connection; nothing to report.
            let _ = connection.await;
            drop(slot);
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(grace) => {
            tracing::warn!(?grace, "requests still running after the shutdown grace; exiting");
        }
    }
    Ok(())
}

/// Open connections per client.
struct PerClient {
    max: usize,
    open: Mutex<HashMap<ClientKey, usize>>,
}

/// One open connection of a capped client; counted down when dropped. `None` inside for a
/// trusted proxy (not capped).
struct ClientSlot(Option<(Arc<PerClient>, ClientKey)>);

fn client_slot(
    per_client: &Arc<PerClient>,
    trusted: &TrustedProxies,
    peer: SocketAddr,
) -> Option<ClientSlot> {
    if trusted.contains(peer.ip()) {
        return Some(ClientSlot(None));
    }
    let key = ClientKey::of(peer.ip());
    let mut open = per_client
        .open
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let count = open.entry(key).or_insert(0);
    if *count >= per_client.max {
        return None;
    }
    *count += 1;
    Some(ClientSlot(Some((per_client.clone(), key))))
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let Some((per_client, key)) = self.0.take() else {
            return;
        };
        let mut open = per_client
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                // Forgotten, so that many clients seen once cannot grow the table.
                open.remove(&key);
            }
        }
    }
}

/// A stream whose writes fail with `TimedOut` once the peer has taken no bytes for `limit`:
/// hyper then closes the connection. The clock starts when a write cannot proceed and stops
/// at the next one that does, so a slow but steady reader is never cut off.
struct WriteTimeout<S> {
    inner: S,
    limit: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
    /// Whether this connection's timeout was counted.
    counted: bool,
}

impl<S> WriteTimeout<S> {
    fn new(inner: S, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            stalled: None,
            counted: false,
        }
    }

    /// After a write returned `Pending`: an error once the stall has lasted `limit`.
    fn stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                // Counted once: the connection ends with this error.
                if !self.counted {
                    self.counted = true;
                    metrics()
                        .connections_closed
                        .add(1, &[ConnectionClosed::WriteTimeout.key_value()]);
                }
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the client took no bytes of its response for {limit:?}"),
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match poll {
            Poll::Ready(outcome) => {
                self.stalled = None;
                Poll::Ready(outcome)
            }
            Poll::Pending => match self.stall(cx) {
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                _ => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progress(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progress(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.progress(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
