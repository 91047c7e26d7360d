//! A TCP proxy in front of one api process that loses the answer to the first request it
//! carries: it forwards that request whole, reads the api's whole answer (the command was
//! applied and committed), then closes the client's connection without it and reports the loss,
//! so the test can restart the api. From then until [`LosingProxy::set_backend`] names the
//! restarted api, every connection is closed at once, as a refused one would be; after it, each
//! connection is copied both ways. That is an api that crashed after committing a command and
//! before its answer left, then came back: the client's retries meet the outage, then the api.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

pub struct LosingProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

struct Shared {
    backend: Mutex<Option<SocketAddr>>,
    armed: AtomicBool,
    lost: AtomicUsize,
    refused: AtomicUsize,
    loss: Notify,
    refusal: Notify,
}

impl LosingProxy {
    pub async fn start(backend: SocketAddr) -> LosingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("the proxy's address");
        let shared = Arc::new(Shared {
            backend: Mutex::new(Some(backend)),
            armed: AtomicBool::new(true),
            lost: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            loss: Notify::new(),
            refusal: Notify::new(),
        });
        let accepting = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(carry(client, Arc::clone(&accepting)));
            }
        });
        LosingProxy { addr, shared, task }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until an answer was lost (the first request's).
    pub async fn lost_an_answer(&self) {
        if self.shared.lost.load(Ordering::SeqCst) == 0 {
            self.shared.loss.notified().await;
        }
    }

    /// Waits until a connection was closed unanswered while no api was there (a client met
    /// the outage).
    pub async fn refused_a_connection(&self) {
        loop {
            let refused = self.shared.refusal.notified();
            if self.shared.refused.load(Ordering::SeqCst) > 0 {
                return;
            }
            refused.await;
        }
    }

    /// Answers lost so far, and connections closed at once while no api was there.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.shared.lost.load(Ordering::SeqCst),
            self.shared.refused.load(Ordering::SeqCst),
        )
    }

    /// The api the following connections go to.
    pub fn set_backend(&self, backend: SocketAddr) {
        *self.shared.backend.lock().expect("backend") = Some(backend);
    }
}

impl Drop for LosingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn carry(mut client: TcpStream, shared: Arc<Shared>) {
    let backend = *shared.backend.lock().expect("backend");
    let Some(backend) = backend else {
        shared.refused.fetch_add(1, Ordering::SeqCst);
        shared.refusal.notify_waiters();
        return; // the api is down: the connection closes unanswered
    };
    let Ok(mut server) = TcpStream::connect(backend).await else {
        shared.refused.fetch_add(1, Ordering::SeqCst);
        return;
    };
    if !shared.armed.swap(false, Ordering::SeqCst) {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        return;
    }
    let Some(request) = read_message(&mut client).await else {
        return;
    };
    if server.write_all(&request).await.is_err() {
        return;
    }
    // The api's whole answer: the command is committed when it is written. (Without one, the
    // client's retry reaches this api and nothing is counted lost: the test fails on that.)
    if read_message(&mut server).await.is_none() {
        return;
    }
    // No later connection may reach this api: it is going down.
    *shared.backend.lock().expect("backend") = None;
    drop(client);
    shared.lost.fetch_add(1, Ordering::SeqCst);
    shared.loss.notify_one();
}

/// One HTTP/1.1 message: the head, then `Content-Length` bytes of body (or a chunked body up
/// to its last chunk). `None` when the peer closes first.
async fn read_message(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length = head.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .and_then(|v| v.trim().parse::<usize>().ok())
    });
    let chunked = head.contains("transfer-encoding: chunked");
    loop {
        let body = &buf[head_end..];
        let complete = match length {
            Some(n) => body.len() >= n,
            None if chunked => body.ends_with(b"0\r\n\r\n"),
            None => true,
        };
        if complete {
            return Some(buf);
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
