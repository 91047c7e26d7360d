//! The bound on every round trip to PostgreSQL, and the cancel of a query whose caller gave up
//! (a timeout, a dropped request): shared by [`super::Database`] and the wake-up task
//! (`wakeup.rs`), which cannot hold the database that owns it.

use std::time::Duration;

use deadpool_postgres::Object;

use super::errors::StoreError;
use super::metrics::{self, Op};
use super::tls::MakeRustlsConnect;

/// The bound on one round trip, and the cancel of a query whose caller gave up
/// ([`Bounds::run`]): what every call through [`super::Database`] obeys, and the wake-up task's
/// NOTIFY too (the task holds a copy: it cannot hold the database, which owns it).
#[derive(Clone)]
pub(super) struct Bounds {
    pub(super) round_trip_timeout: Duration,
    /// The sessions' TLS, for the cancel requests (a connection of their own, with the same
    /// `sslmode` and verification as the session they cancel).
    pub(super) tls: MakeRustlsConnect,
}

impl Bounds {
    /// Runs one round trip on `client` within the bound, and records its latency under `op`
    /// (see [`super::Database::bounded`]).
    pub(super) async fn run<T, F>(
        &self,
        op: Op,
        client: Object,
        call: F,
    ) -> Result<(Object, T), StoreError>
    where
        F: AsyncFnOnce(&Object) -> Result<T, tokio_postgres::Error>,
    {
        let started = std::time::Instant::now();
        // Dropping a query's future does not stop it on the server: without a cancel request
        // an abandoned query (its caller timed out or went away) would keep running on a
        // connection and hold its locks until statement_timeout. The guard sends one unless the
        // call finished, and keeps that connection out of the pool: the cancel arrives when it
        // arrives, and would otherwise cancel whatever the next borrower sends on it.
        let guard = CancelOnDrop {
            token: Some(client.cancel_token()),
            tls: self.tls.clone(),
            client: Some(client),
        };
        let outcome = match guard.client.as_ref() {
            Some(client) => tokio::time::timeout(self.round_trip_timeout, call(client)).await,
            None => unreachable!("the guard holds the client until it is disarmed"),
        };
        metrics::record(op, started);
        match outcome {
            Ok(Ok(value)) => Ok((guard.disarm(), value)),
            Ok(Err(e)) => {
                drop(guard.disarm());
                Err(e.into())
            }
            Err(_) => {
                // The guard cancels the query and drops the connection out of the pool.
                drop(guard);
                Err(StoreError::Unavailable(format!(
                    "no answer from the database within {:?}",
                    self.round_trip_timeout
                )))
            }
        }
    }
}

/// Holds a connection while its query runs. Dropped before [`CancelOnDrop::disarm`] (its
/// caller gave up: a read's lag measurement timed out, the HTTP request was dropped, or the
/// round-trip bound ran out), it sends a cancel request for the query in flight and takes the
/// connection out of the pool.
struct CancelOnDrop {
    token: Option<tokio_postgres::CancelToken>,
    tls: MakeRustlsConnect,
    client: Option<Object>,
}

/// How long a cancel request may take; it is a connection of its own to the server.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(2);

impl CancelOnDrop {
    /// The call finished: the connection, for the pool.
    fn disarm(mut self) -> Object {
        self.token = None;
        match self.client.take() {
            Some(client) => client,
            None => unreachable!("disarm is called once, on a guard holding its client"),
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(token) = self.token.take() else {
            return;
        };
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let tls = self.tls.clone();
        runtime.spawn(async move {
            match tokio::time::timeout(CANCEL_TIMEOUT, token.cancel_query(tls)).await {
                Ok(Ok(())) => metrics::cancelled(),
                Ok(Err(e)) => tracing::warn!(error = %e, "could not cancel an abandoned query"),
                Err(_) => tracing::warn!("cancelling an abandoned query timed out"),
            }
        });
    }
}
