//! An entry's key (`model::Key`: its other columns and tie) as the rows of `user_scores`, the
//! outbox and the frozen standings spell it: `columns`, `col2`, `col3`, `tie` (migration V14).
//! One reading for every statement that selects them.

use tokio_postgres::Row;

use crate::model::{Key, MAX_COLUMNS};

/// The key of a row with the columns `columns`, `col2`, `col3` and `tie`. A column count
/// outside 1 to 3 (the tables' CHECKs allow none) reads as the nearest one.
pub fn key(row: &Row) -> Result<Key, tokio_postgres::Error> {
    let columns: i16 = row.try_get("columns")?;
    Ok(Key {
        columns: columns.clamp(1, MAX_COLUMNS as i16) as u8,
        rest: [row.try_get("col2")?, row.try_get("col3")?],
        tie: row.try_get("tie")?,
    })
}
