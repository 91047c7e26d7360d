//! Identical top reads in flight at the same time share one Redis round trip.
//!
//! A board's first page is the hottest read of a game backend: many players ask for the same
//! `top` at once. Each answer used to cost its own ZRANGE, the parsing of a 200-element reply
//! and 100 strings allocated; the read benchmark's profile showed that work, with the socket
//! calls around it, as most of the API's CPU (docs/performance.md). Here a request for a page
//! whose read is already in flight waits for that read instead of sending its own.
//!
//! Freshness is unchanged in kind: a joined read started at most one Redis round trip before
//! the request arrived, far inside the lag the answer states (measured every
//! `api.freshness_cache_ms`). A read that has completed is never reused: the next request
//! starts a new one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use ledgerboard_core::domain::{BoardId, RankedEntry};
use ledgerboard_core::projection::read::{self, Sealed};
use ledgerboard_core::projection::{ReadModelError, Store};

type Page = Result<Sealed<Arc<Vec<RankedEntry>>>, Arc<ReadModelError>>;
type Flight = Shared<BoxFuture<'static, Page>>;

/// The reads in flight, by board, offset and limit.
#[derive(Default)]
pub struct TopReads {
    flights: Mutex<HashMap<(BoardId, u64, u64), Flight>>,
}

impl TopReads {
    /// The page from the projection: from a read in flight for the same page, or a new one.
    pub async fn top(
        &self,
        store: &Store,
        board: &BoardId,
        offset: u64,
        limit: u64,
    ) -> Result<Sealed<Arc<Vec<RankedEntry>>>, ReadModelError> {
        let key = (board.clone(), offset, limit);
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
            match flights.get(&key) {
                // Still running: join it.
                Some(f) if f.peek().is_none() => f.clone(),
                _ => {
                    let (store, board) = (store.clone(), board.clone());
                    let f = async move {
                        read::top(&store, &board, offset, limit)
                            .await
                            .map(|page| Sealed {
                                value: Arc::new(page.value),
                                seal: page.seal,
                            })
                            .map_err(Arc::new)
                    }
                    .boxed()
                    .shared();
                    flights.insert(key.clone(), f.clone());
                    f
                }
            }
        };
        let page = flight.clone().await;
        {
            // The first waiter to finish removes the flight, unless a newer one replaced it.
            let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
            if flights.get(&key).is_some_and(|f| f.ptr_eq(&flight)) {
                flights.remove(&key);
            }
        }
        page.map_err(ReadModelError::Shared)
    }
}
