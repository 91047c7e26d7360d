//! Where board definitions live (`board_definitions`, migration V5) and the api's short-lived
//! cache of them. A command carries the revision it was validated against and its statement
//! refuses any other, so a cached definition can be late but never applied wrongly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::db::{Database, Op, Statement, StoreError};
use crate::definition::{BoardDefinition, Operator, Sort, TieBreak};
use crate::domain::BoardId;

/// Parameters: board.
pub static GET: Statement<1> = Statement::new(
    Op::BoardDefinition,
    include_str!("sql/definition_get.sql"),
    [Type::TEXT],
);

/// The board's definition from PostgreSQL; the implicit one when it is not declared.
pub async fn get(db: &Database, board: &BoardId) -> Result<BoardDefinition, StoreError> {
    match db.query_opt(&GET, [&board.as_str()]).await? {
        None => Ok(BoardDefinition::implicit(board.clone())),
        Some(row) => from_row(board.clone(), &row),
    }
}

/// A definition from a row with the columns of `definition_get.sql`.
pub fn from_row(board: BoardId, row: &Row) -> Result<BoardDefinition, StoreError> {
    let text = |name: &str| -> Result<String, StoreError> { Ok(row.try_get::<_, String>(name)?) };
    // The table's CHECKs allow only these names; another one is a schema this version does
    // not know (a newer one), reported rather than guessed.
    let unknown = |what: &str, v: &str| {
        StoreError::SchemaMismatch(format!(
            "board {board}: unknown {what} {v:?} in board_definitions"
        ))
    };
    let operator = text("operator")?;
    let sort = text("sort")?;
    let tie_break = text("tie_break")?;
    Ok(BoardDefinition {
        display_name: text("display_name")?,
        operator: Operator::parse(&operator).ok_or_else(|| unknown("operator", &operator))?,
        sort: Sort::parse(&sort).ok_or_else(|| unknown("sort", &sort))?,
        tie_break: TieBreak::parse(&tie_break).ok_or_else(|| unknown("tie_break", &tie_break))?,
        min_score: row.try_get("min_score")?,
        max_score: row.try_get("max_score")?,
        min_delta: row.try_get("min_delta")?,
        max_delta: row.try_get("max_delta")?,
        revision: row.try_get("revision")?,
        declared: true,
        board,
    })
}

/// Boards cached at most; past it the cache starts over (a game has tens of boards, an
/// attacker naming random boards must not grow memory).
const MAX_CACHED: usize = 10_000;

/// The api's cache of definitions: each is re-read after `ttl`, and at once after a command's
/// statement said its revision is not the board's any more ([`Definitions::forget`]).
pub struct Definitions {
    ttl: Duration,
    cached: Mutex<HashMap<BoardId, (Instant, Arc<BoardDefinition>)>>,
}

impl Definitions {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            cached: Mutex::new(HashMap::new()),
        }
    }

    pub async fn get(
        &self,
        db: &Database,
        board: &BoardId,
    ) -> Result<Arc<BoardDefinition>, StoreError> {
        if let Some(hit) = self.fresh(board) {
            return Ok(hit);
        }
        let def = Arc::new(get(db, board).await?);
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if cached.len() >= MAX_CACHED {
            cached.clear();
        }
        cached.insert(board.clone(), (Instant::now(), def.clone()));
        Ok(def)
    }

    fn fresh(&self, board: &BoardId) -> Option<Arc<BoardDefinition>> {
        let cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached
            .get(board)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, def)| def.clone())
    }

    /// The board's definition as last read, however old (None if never read, or dropped):
    /// for reads that may answer without PostgreSQL (`consistency=eventual`) while it cannot
    /// state the definition.
    pub fn last_known(&self, board: &BoardId) -> Option<Arc<BoardDefinition>> {
        let cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached.get(board).map(|(_, def)| def.clone())
    }

    /// Drops the board's entry: the next [`Definitions::get`] reads PostgreSQL.
    pub fn forget(&self, board: &BoardId) {
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached.remove(board);
    }
}
