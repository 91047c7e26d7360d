//! The feed's reads: a page of the log after a cursor, filtered by kind and board, bounded in
//! what one call reads (a window of positions), and the log's bounds.

use tokio_postgres::types::Type;

use super::render::{self, Stored};
use super::{Event, EventsError, Kind};
use crate::board::definition::Definitions;
use crate::db::{Database, Op, Statement, StoreError};
use crate::model::BoardId;

/// Parameters: after, up to (inclusive), kinds, boards, limit.
static PAGE: Statement<5> = Statement::new(
    Op::EventFeed,
    include_str!("sql/page.sql"),
    [
        Type::INT8,
        Type::INT8,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::INT8,
    ],
);
static BOUNDS: Statement<0> = Statement::new(Op::EventFeed, include_str!("sql/bounds.sql"), []);

/// Positions one page reads at most, whatever its filter matches: a filter that matches
/// rarely pages on through the log in steps of this many instead of scanning it in one call.
pub const WINDOW: i64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The last position (0: the log is empty).
    pub last: i64,
    /// Retention deleted every event at or below it (0: none).
    pub swept_through: i64,
}

pub async fn bounds(db: &Database) -> Result<Bounds, StoreError> {
    let row = db.query_one(&BOUNDS, []).await?;
    Ok(Bounds {
        last: row.try_get("last")?,
        swept_through: row.try_get("swept_through")?,
    })
}

/// What a page asks for.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Empty: every kind.
    pub kinds: Vec<Kind>,
    /// Empty: every board.
    pub boards: Vec<BoardId>,
}

#[derive(Debug, Clone)]
pub struct Page {
    pub events: Vec<Event>,
    /// The cursor to ask with next (`after=`): past every event this page returned or skipped.
    pub next: i64,
    /// The log's last position when the page was read.
    pub head: i64,
}

/// The events after `after` (`None`: from the oldest kept) that `filter` matches, at most
/// `limit`, in position order. A cursor older than what retention kept is refused
/// ([`EventsError::CursorExpired`]): events after it are gone, and a page must not pretend
/// otherwise.
pub async fn page(
    db: &Database,
    definitions: &Definitions,
    after: Option<i64>,
    filter: &Filter,
    limit: i64,
) -> Result<Page, EventsError> {
    let bounds = bounds(db).await?;
    let after = match after {
        None => bounds.swept_through,
        Some(a) if a < bounds.swept_through => {
            return Err(EventsError::CursorExpired {
                after: a,
                swept_through: bounds.swept_through,
            });
        }
        Some(a) => a,
    };
    // Every position up to `last` has committed (the sequencer commits positions in order), so
    // the page never steps past one that is still to come.
    let upto = after.saturating_add(WINDOW).min(bounds.last).max(after);
    let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
    let boards: Vec<&str> = filter.boards.iter().map(|b| b.as_str()).collect();
    let rows = db
        .query(&PAGE, [&after, &upto, &kinds, &boards, &limit])
        .await?;
    let mut events = Vec::with_capacity(rows.len());
    for row in &rows {
        let stored = Stored::from_row(row)?;
        let columns = if stored.is_score() {
            let board = BoardId::parse_stored(&stored.board_id).map_err(|e| {
                StoreError::Internal(format!(
                    "event {} names a board it cannot: {e}",
                    stored.event_id
                ))
            })?;
            definitions.get(db, &board).await?.order().columns
        } else {
            crate::model::Columns::ONE
        };
        events.push(render::event(stored, columns)?);
    }
    let next = if events.len() as i64 >= limit {
        events.last().map_or(upto, |e| e.position)
    } else {
        upto
    };
    Ok(Page {
        events,
        next,
        head: bounds.last,
    })
}
