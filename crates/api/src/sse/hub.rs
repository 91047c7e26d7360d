//! A hub's loop (`live/hub.rs`): it reads the board's first N when the board changes and
//! shares the message with every stream on it through the hub's `watch`.
//!
//! Reads are coalesced: a change wakes the hub at once if it has not read for
//! `api.live_min_interval_ms`, else when that interval is over, and every change that arrives
//! meanwhile is covered by that one read. Before reading it asks the board's change sequence
//! (one GET): when the last answer came from a whole projection and the sequence did not move,
//! the board did not change and nothing is read (a change of another period or cohort of the
//! same board wakes every hub of the board). The read is the reads' own (`routes/reads.rs`,
//! `consistency=bounded`): the projection while it is whole and fresh, else PostgreSQL, with
//! the same `freshness`.

use std::sync::Arc;

use ledgerboard_core::projection::live;
use tokio::time::Instant;

use super::route::top_page;
use crate::freshness::{ProjectionState, Source};
use crate::live::Live;
use crate::live::hub::{Hub, HubKey};
use crate::live::render::{
    LiveFreshness, LiveMessage, LiveTop, Snapshot, Updates, digest, frame, freshness_kind, split,
};
use crate::routes::reads::period_board;
use crate::state::AppState;

/// The hub's loop: read, publish, wait for a change (or the poll while pub/sub is down), wait
/// out the minimum interval, read again; until no stream holds it or the api stops.
pub(super) async fn run(hub: Arc<Hub>, live: Arc<Live>, state: AppState) {
    let settings = live.settings;
    let mut updates = live.updates.subscribe();
    loop {
        let mode = *updates.borrow_and_update();
        let last = hub.snapshot.borrow().clone();
        let read = refresh(&state, &hub.key, last.as_deref(), mode).await;
        let failed = read.is_none();
        if let Some(next) = read
            && last
                .as_ref()
                .is_none_or(|l| l.digest != next.digest || l.sequence != next.sequence)
        {
            hub.snapshot.send_replace(Some(Arc::new(next)));
        }
        let read_at = Instant::now();
        // Polling when the subscriber is down, and after a read that failed (the stores
        // answered nothing: try again later rather than wait for a change that may not come).
        let polling = mode == Updates::Polling || failed;
        tokio::select! {
            _ = live.stop.cancelled() => return,
            _ = hub.snapshot.closed() => {
                if live.retire(&hub) {
                    return;
                }
                // A stream joined meanwhile: read for it now.
                continue;
            }
            _ = hub.wake.notified() => {}
            _ = updates.changed() => {}
            _ = tokio::time::sleep(settings.poll), if polling => {}
        }
        tokio::select! {
            _ = live.stop.cancelled() => return,
            _ = tokio::time::sleep_until(read_at + settings.min_interval) => {}
        }
    }
}

/// The board's message now; None when the stores could not say (logged).
async fn refresh(
    state: &AppState,
    key: &HubKey,
    last: Option<&Snapshot>,
    updates: Updates,
) -> Option<Snapshot> {
    // The period a stream of `current` reads moves on with the board's periods.
    let target = match period_board(state, key.board.clone(), key.period.as_deref(), key.cohort)
        .await
    {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(board = %key.board, error = ?e, "live: the board's period cannot be read");
            return None;
        }
    };
    // Read before the board: a change after it is then a new sequence, and read again.
    let sequence = match live::sequence(&state.store, &target.board).await {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::debug!(board = %target.board, error = %e, "live: no change sequence");
            None
        }
    };
    if let (Some(last), Some(sequence)) = (last, sequence)
        && last.clean
        && last.sequence == sequence
        && last.target == target.board
        && last.updates == updates
        && updates == Updates::Pubsub
    {
        return None;
    }
    let (page, freshness) = match top_page(state, &target, key.top).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(board = %target.board, error = ?e, "live: the board cannot be read");
            return None;
        }
    };
    let freshness = LiveFreshness {
        read: freshness,
        updates,
    };
    let message = LiveMessage {
        board: key.board.as_str(),
        period: target.period.as_deref(),
        cohort: target.cohort,
        top: LiveTop {
            entries: &page.entries,
            total: page.total,
        },
        me: None,
        freshness,
    };
    let (head, tail) = split(&message);
    let kind = freshness_kind(&freshness);
    let digest = digest(&[head.as_bytes(), kind.as_bytes()]);
    let sequence = sequence.or(last.map(|l| l.sequence)).unwrap_or(0);
    let frame = frame(sequence, digest, &[&head, &tail]);
    Some(Snapshot {
        sequence,
        target: target.board,
        period: target.period,
        cohort: target.cohort,
        archived: target.archived,
        clean: freshness.read.source == Source::Projection
            && freshness.read.projection == Some(ProjectionState::Whole),
        updates,
        head,
        tail,
        digest,
        frame,
    })
}
