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
use ledgerboard_core::board::definition::Order;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::{self, Sealed};
use ledgerboard_core::projection::{ReadModelError, Store};
use ledgerboard_core::ranking::{Cursor, Page, RankMode};

type Shareable = Result<Sealed<Arc<Page>>, Arc<ReadModelError>>;
type Flight = Shared<BoxFuture<'static, Shareable>>;

/// Which page: everything that changes its answer (the board's order too, so a definition
/// changed meanwhile never joins a read of the old order).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopRequest {
    pub board: BoardId,
    pub order: Order,
    pub mode: RankMode,
    /// Where the page starts: a position, or just after a cursor.
    pub start: Start,
    pub limit: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Start {
    Offset(u64),
    After(Cursor),
}

/// The reads in flight, by page.
#[derive(Default)]
pub struct TopReads {
    flights: Mutex<HashMap<TopRequest, Flight>>,
}

impl TopReads {
    /// The page from the projection: from a read in flight for the same page, or a new one.
    pub async fn top(
        &self,
        store: &Store,
        request: &TopRequest,
    ) -> Result<Sealed<Arc<Page>>, ReadModelError> {
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
            match flights.get(request) {
                // Still running: join it.
                Some(f) if f.peek().is_none() => f.clone(),
                _ => {
                    let (store, r) = (store.clone(), request.clone());
                    let f = async move {
                        let page = match &r.start {
                            Start::Offset(offset) => {
                                read::top(&store, &r.board, r.order, r.mode, *offset, r.limit).await
                            }
                            Start::After(cursor) => {
                                read::after(&store, &r.board, r.order, r.mode, cursor, r.limit)
                                    .await
                            }
                        };
                        page.map(|page| Sealed {
                            value: Arc::new(page.value),
                            seal: page.seal,
                        })
                        .map_err(Arc::new)
                    }
                    .boxed()
                    .shared();
                    flights.insert(request.clone(), f.clone());
                    f
                }
            }
        };
        let page = flight.clone().await;
        {
            // The first waiter to finish removes the flight, unless a newer one replaced it.
            let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
            if flights.get(request).is_some_and(|f| f.ptr_eq(&flight)) {
                flights.remove(request);
            }
        }
        page.map_err(ReadModelError::Shared)
    }
}
