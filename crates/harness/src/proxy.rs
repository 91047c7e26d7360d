//! A small TCP load balancer for rolling-restart runs, standing in for a Kubernetes Service:
//! it round-robins each new client connection over the backends whose `/readyz` answered 200
//! at the last poll (the Service's ready endpoints, kept by polling as the kubelet does), and
//! copies bytes both ways. A connection it cannot place (no ready backend, or the chosen one
//! refuses) is closed at once, as a client behind a Service would see it refused.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One backend: where clients are sent, and where its readiness is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backend {
    pub serve: SocketAddr,
    pub admin: SocketAddr,
}

#[derive(Default)]
struct Table {
    /// Every backend, with whether its last `/readyz` answered 200.
    backends: Vec<(Backend, bool)>,
    next: usize,
}

/// The proxy; dropping it stops its tasks.
pub struct Proxy {
    addr: SocketAddr,
    table: Arc<Mutex<Table>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Proxy {
    /// Listens on a free local port and polls every backend's `/readyz` every `poll`.
    pub async fn start(poll: Duration) -> io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let table = Arc::new(Mutex::new(Table::default()));
        let accept = tokio::spawn(accept_loop(listener, table.clone()));
        let poller = tokio::spawn(poll_loop(table.clone(), poll));
        Ok(Proxy {
            addr,
            table,
            tasks: vec![accept, poller],
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Adds a backend, not ready until its first poll says so (a new pod's endpoint).
    pub fn add(&self, backend: Backend) {
        lock(&self.table).backends.push((backend, false));
    }

    /// Removes a backend (its pod is gone).
    pub fn remove(&self, backend: Backend) {
        lock(&self.table).backends.retain(|(b, _)| *b != backend);
    }

    /// Whether `backend`'s last poll found it ready.
    pub fn is_ready(&self, backend: Backend) -> bool {
        lock(&self.table)
            .backends
            .iter()
            .any(|(b, ready)| *b == backend && *ready)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    // A list and a counter: a panic elsewhere cannot leave them half written.
    table.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The next ready backend, round-robin.
fn pick(table: &Mutex<Table>) -> Option<SocketAddr> {
    let mut table = lock(table);
    let ready: Vec<SocketAddr> = table
        .backends
        .iter()
        .filter(|(_, ready)| *ready)
        .map(|(b, _)| b.serve)
        .collect();
    if ready.is_empty() {
        return None;
    }
    table.next = table.next.wrapping_add(1);
    Some(ready[table.next % ready.len()])
}

async fn accept_loop(listener: TcpListener, table: Arc<Mutex<Table>>) {
    loop {
        let Ok((mut client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let Some(target) = pick(&table) else {
            continue; // dropped: closed
        };
        tokio::spawn(async move {
            let connect = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(target));
            let Ok(Ok(mut server)) = connect.await else {
                return; // the client's connection closes unanswered
            };
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        });
    }
}

async fn poll_loop(table: Arc<Mutex<Table>>, poll: Duration) {
    loop {
        let backends: Vec<Backend> = lock(&table).backends.iter().map(|(b, _)| *b).collect();
        for backend in backends {
            // Bounded below the poll period, as a probe's timeoutSeconds.
            let ready =
                crate::http::request(backend.admin, "GET", "/readyz", &[], String::new(), poll)
                    .await
                    .is_ok_and(|(status, _)| status == 200);
            if let Some(entry) = lock(&table)
                .backends
                .iter_mut()
                .find(|(b, _)| *b == backend)
            {
                entry.1 = ready;
            }
        }
        tokio::time::sleep(poll).await;
    }
}
