//! Where board definitions live (`board_definitions`, migration V5): how they are read,
//! declared, changed and listed (the api's `PUT /v1/boards/{board}`, `lbctl board`).
//!
//! A board's rule (operator, sort, tie break) changes only while it has no entries: its entries
//! were applied under the rule and are ordered by it. [`define`] checks that in the statement
//! that writes the definition, under a table lock that keeps commands from adding an entry
//! between the check and the commit (`sql/definition_define.sql`,
//! `sql/definition_lock_entries.sql`). Bounds and the display name may change at any time; they
//! apply to the commands that follow (scores already held stay as they are).

use std::time::Duration;

use tokio_postgres::Row;
use tokio_postgres::types::Type;

use super::error::DefinitionError;
use super::parse::Declaration;
use super::rules;
use super::types::{BoardDefinition, Column, Reset, Sort, TieBreak, WritePolicy};
use crate::board::operator::Operator;
use crate::board::schedule;
use crate::db::{Database, Op, Statement, StoreError, commit};
use crate::model::BoardId;

/// Parameters: board.
pub static GET: Statement<1> = Statement::new(
    Op::BoardDefinition,
    include_str!("../sql/definition_get.sql"),
    [Type::TEXT],
);

/// The board's definition from PostgreSQL; the implicit one when it is not declared. A period
/// of a board (`weekly~20261130T000000Z`) has its board's definition.
pub async fn get(db: &Database, board: &BoardId) -> Result<BoardDefinition, StoreError> {
    let board = board.base();
    match db.query_opt(&GET, [&board.as_str()]).await? {
        None => Ok(BoardDefinition::implicit(board)),
        Some(row) => from_row(board, &row),
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
    let reset = text("reset")?;
    let write_policy = text("write_policy")?;
    let columns = match row.try_get::<_, Option<String>>("columns")? {
        None => Vec::new(),
        Some(json) => {
            serde_json::from_str::<Vec<Column>>(&json).map_err(|_| unknown("columns", &json))?
        }
    };
    let feeds = row
        .try_get::<_, Vec<String>>("feeds")?
        .iter()
        .map(|f| BoardId::parse(f).map_err(|_| unknown("fed board", f)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(BoardDefinition {
        reset: Reset::parse(&reset).ok_or_else(|| unknown("reset", &reset))?,
        time_zone: text("time_zone")?,
        display_name: text("display_name")?,
        operator: Operator::parse(&operator).ok_or_else(|| unknown("operator", &operator))?,
        sort: Sort::parse(&sort).ok_or_else(|| unknown("sort", &sort))?,
        tie_break: TieBreak::parse(&tie_break).ok_or_else(|| unknown("tie_break", &tie_break))?,
        min_score: row.try_get("min_score")?,
        max_score: row.try_get("max_score")?,
        min_delta: row.try_get("min_delta")?,
        max_delta: row.try_get("max_delta")?,
        columns,
        feeds,
        write_policy: WritePolicy::parse(&write_policy)
            .ok_or_else(|| unknown("write_policy", &write_policy))?,
        attempts: stored(row, &board, "attempts")?,
        review: stored(row, &board, "review")?,
        revision: row.try_get("revision")?,
        declared: true,
        board,
    })
}

/// A rule stored as JSON (`attempts`, `review`) in `row`: None for NULL; JSON this version
/// cannot read is a newer schema's, reported rather than guessed.
fn stored<T: serde::de::DeserializeOwned>(
    row: &Row,
    board: &BoardId,
    name: &str,
) -> Result<Option<T>, StoreError> {
    let json = row.try_get::<_, Option<String>>(name)?;
    rules::from_stored(json.as_deref()).map_err(|_| {
        StoreError::SchemaMismatch(format!(
            "board {board}: unknown {name} {json:?} in board_definitions"
        ))
    })
}

/// What [`define`] may assume about the board's definition before it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Create or replace (`PUT`).
    Any,
    /// Create only (`lbctl board create`).
    Undeclared,
    /// Replace exactly this revision (0: undeclared), read by the caller (`lbctl board update`).
    Revision(i64),
}

/// Why [`define`] wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum DefineError {
    #[error(transparent)]
    Invalid(#[from] DefinitionError),
    /// The change would alter the rule of a board that has entries (api: 409).
    #[error(
        "board {board} has entries, applied as {operator}, {sort}, ties by {tie_break}, reset {reset} in {time_zone}: its operator, sort, tie_break, reset, time_zone and the number and orders of its columns cannot change (bounds, column names and display_name can)"
    )]
    HasEntries {
        board: BoardId,
        operator: &'static str,
        sort: &'static str,
        tie_break: &'static str,
        reset: String,
        time_zone: String,
    },
    /// A board it would feed is not declared (api: 422).
    #[error("{} not declared: declare a board before another feeds it", names(.0))]
    FeedsUnknown(Vec<String>),
    /// A board it would feed, or one that feeds it, ranks by other columns (api: 422).
    #[error(
        "{} rank by other columns (names and orders) than {board}: linked boards share their columns", names(.others)
    )]
    FeedsColumns { board: BoardId, others: Vec<String> },
    /// A board it would feed, or one that feeds it, takes the other value field: a `delta`
    /// (add) where this board's commands carry a `score` (best, latest), or the other way
    /// round (api: 422).
    #[error(
        "linked boards {} take {} where a command to {board} carries a {}: one command must suit every linked board", .others.join(", "), .theirs, .ours
    )]
    FeedsValue {
        board: BoardId,
        others: Vec<String>,
        ours: &'static str,
        theirs: &'static str,
    },
    /// The links would chain or loop: a board it would feed feeds others, or it is fed and
    /// would feed (api: 422).
    #[error(
        "{0}: a board that is fed feeds no other board (so a command reaches at most 8 boards and no link can loop)"
    )]
    FeedsLoop(String),
    /// [`Expect::Undeclared`], and the board is declared.
    #[error("board {0} is already declared (change it with update)")]
    AlreadyDeclared(BoardId),
    /// [`Expect::Revision`], and the definition has another revision now.
    #[error("board {0}'s definition changed meanwhile; read it again")]
    Changed(BoardId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// `a`, or `a, b and c`, with the verb's number.
fn names(boards: &[String]) -> String {
    match boards {
        [one] => format!("board {one} is"),
        [init @ .., last] => format!("boards {} and {last} are", init.join(", ")),
        [] => "no board is".to_owned(),
    }
}

impl From<tokio_postgres::Error> for DefineError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(e.into())
    }
}

/// The outcome of [`define`]: the definition as stored, whether the board was undeclared
/// before, and whether anything changed (a declaration equal to the stored one writes nothing
/// and keeps the revision, so repeating a `PUT` is harmless to commands in flight).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defined {
    pub definition: BoardDefinition,
    pub created: bool,
    pub changed: bool,
    /// The sort or the tie break changed (the board had no entries): a seal that states the
    /// old order (`projection::read::sealed_order`) must go, so the caller asks for a rebuild.
    pub order_changed: bool,
}

/// Parameters: the bound.
pub static LOCK_TIMEOUT: Statement<1> = Statement::new(
    Op::BoardDefine,
    include_str!("../sql/definition_lock_timeout.sql"),
    [Type::TEXT],
);

pub static LOCK_ENTRIES: Statement<0> = Statement::new(
    Op::BoardDefine,
    include_str!("../sql/definition_lock_entries.sql"),
    [],
);

/// Parameters: board, display name, operator, sort, tie break, min and max score, min and max
/// delta, the revision read, reset, time zone, columns (JSON text), feeds, write policy,
/// attempts and review (JSON text or NULL).
pub static DEFINE: Statement<17> = Statement::new(
    Op::BoardDefine,
    include_str!("../sql/definition_define.sql"),
    [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::INT8,
        Type::INT8,
        Type::INT8,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT_ARRAY,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
    ],
);

pub static LOCK_LINKS: Statement<0> = Statement::new(
    Op::BoardDefine,
    include_str!("../sql/definition_links_lock.sql"),
    [],
);

/// Parameters: board, feeds, columns (JSON text), sort, operator.
pub static LINKS: Statement<5> = Statement::new(
    Op::BoardDefine,
    include_str!("../sql/definition_links.sql"),
    [
        Type::TEXT,
        Type::TEXT_ARRAY,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
    ],
);

/// Parameters: time zone. Whether PostgreSQL knows the zone.
pub static TIME_ZONE_KNOWN: Statement<1> = Statement::new(
    Op::BoardDefine,
    include_str!("../sql/definition_time_zone.sql"),
    [Type::TEXT],
);

/// Parameters: board. Opens the first period of a board declared with a reset.
pub static OPEN_FIRST_PERIOD: Statement<1> = Statement::new(
    Op::BoardDefine,
    include_str!("../sql/definition_first_period.sql"),
    [Type::TEXT],
);

/// How long a definer waits for the table lock or a concurrent definer (commands queue behind
/// it meanwhile).
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// How often [`define`] reads again after another definer wrote between its read and its write.
const MAX_ATTEMPTS: usize = 4;

/// Writes `def` (from [`Declaration::definition`]) as `def.board`'s definition, if `expect`
/// holds and the board's rule does not change under entries; bumps the revision when anything
/// changes.
pub async fn define(
    db: &Database,
    def: &BoardDefinition,
    expect: Expect,
) -> Result<Defined, DefineError> {
    for _ in 1..MAX_ATTEMPTS {
        if let Some(defined) = define_once(db, def, expect).await? {
            return Ok(defined);
        }
    }
    match define_once(db, def, expect).await? {
        Some(defined) => Ok(defined),
        None => Err(StoreError::Contended(format!(
            "board {}'s definition kept changing while it was written",
            def.board
        ))
        .into()),
    }
}

/// One transaction of [`define`]; None when another definer wrote first (read again).
async fn define_once(
    db: &Database,
    def: &BoardDefinition,
    expect: Expect,
) -> Result<Option<Defined>, DefineError> {
    let board = &def.board;
    let mut client = db.client().await?;
    // Dropped without commit (an early return), the transaction rolls back.
    let tx = client.transaction().await?;
    let stmts = db.statements();
    let wait = format!("{}ms", LOCK_WAIT.as_millis());
    stmts.query(&tx, &LOCK_TIMEOUT, [&wait]).await?;
    let current = match stmts.query(&tx, &GET, [&board.as_str()]).await?.first() {
        None => BoardDefinition::implicit(board.clone()),
        Some(row) => from_row(board.clone(), row)?,
    };
    match expect {
        Expect::Undeclared if current.declared => {
            return Err(DefineError::AlreadyDeclared(board.clone()));
        }
        Expect::Revision(r) if r != current.revision => {
            return Err(DefineError::Changed(board.clone()));
        }
        _ => {}
    }
    if current.declared && same_declaration(&current, def) {
        return Ok(Some(Defined {
            definition: current,
            created: false,
            changed: false,
            order_changed: false,
        }));
    }
    let reset_changed = current.reset != def.reset || current.time_zone != def.time_zone;
    if def.time_zone != current.time_zone
        && stmts
            .query(&tx, &TIME_ZONE_KNOWN, [&def.time_zone])
            .await?
            .is_empty()
    {
        return Err(DefinitionError::TimeZone.into());
    }
    let attempts = def
        .attempts
        .as_ref()
        .map(|a| serde_json::json!(a).to_string());
    let review = def
        .review
        .as_ref()
        .map(|r| serde_json::json!(r).to_string());
    let columns = (!def.columns.is_empty())
        .then(|| serde_json::to_string(&def.columns))
        .transpose()
        .map_err(|e| StoreError::Internal(format!("columns as JSON: {e}")))?;
    let feeds: Vec<&str> = def.feeds.iter().map(BoardId::as_str).collect();
    if current.feeds != def.feeds || current.shape() != def.shape() {
        stmts.execute(&tx, &LOCK_LINKS, []).await?;
        check_links(stmts, &tx, def, &columns, &feeds).await?;
    }
    if current.order() != def.order() || current.operator != def.operator || reset_changed {
        stmts.execute(&tx, &LOCK_ENTRIES, []).await?;
    }
    let row = stmts
        .query_one(
            &tx,
            &DEFINE,
            [
                &board.as_str(),
                &def.display_name,
                &def.operator.as_str(),
                &def.sort.as_str(),
                &def.tie_break.as_str(),
                &def.min_score,
                &def.max_score,
                &def.min_delta,
                &def.max_delta,
                &current.revision,
                &def.reset.as_string(),
                &def.time_zone,
                &columns,
                &feeds,
                &def.write_policy.as_str(),
                &attempts,
                &review,
            ],
        )
        .await?;
    if row.try_get::<_, bool>("has_entries")? {
        return Err(DefineError::HasEntries {
            board: board.clone(),
            operator: current.operator.as_str(),
            sort: current.sort.as_str(),
            tie_break: current.tie_break.as_str(),
            reset: current.reset.as_string(),
            time_zone: current.time_zone.clone(),
        });
    }
    if row.try_get::<_, Option<i64>>("revision")?.is_none() {
        return Ok(None);
    }
    let definition = from_row(board.clone(), &row)?;
    if reset_changed {
        // After the table lock, as every command takes its locks (the table's, then the
        // period lock in lb_command_board): the reconciler's extension of the former schedule
        // waits, or has committed and its boundaries go now.
        stmts.query(&tx, &schedule::LOCK, [&board.as_str()]).await?;
        stmts
            .execute(&tx, &schedule::CLEAR, [&board.as_str()])
            .await?;
        if definition.reset.resets() {
            stmts
                .execute(&tx, &OPEN_FIRST_PERIOD, [&board.as_str()])
                .await?;
            schedule::extend_in(stmts, &tx, board).await?;
        }
    }
    commit(tx).await?;
    Ok(Some(Defined {
        order_changed: definition.order() != current.order(),
        definition,
        created: !current.declared,
        changed: true,
    }))
}

/// Refuses links that would not hold (`sql/definition_links.sql`), under the links' lock.
async fn check_links(
    stmts: crate::db::Statements,
    tx: &impl crate::db::StatementClient,
    def: &BoardDefinition,
    columns: &Option<String>,
    feeds: &[&str],
) -> Result<(), DefineError> {
    let row = stmts
        .query_one(
            tx,
            &LINKS,
            [
                &def.board.as_str(),
                &feeds,
                columns,
                &def.sort.as_str(),
                &def.operator.as_str(),
            ],
        )
        .await?;
    let list = |name: &str| -> Result<Vec<String>, DefineError> { Ok(row.try_get(name)?) };
    let unknown = list("unknown")?;
    if !unknown.is_empty() {
        return Err(DefineError::FeedsUnknown(unknown));
    }
    let mut others = list("other_columns")?;
    others.extend(list("fed_by_other_columns")?);
    if !others.is_empty() {
        return Err(DefineError::FeedsColumns {
            board: def.board.clone(),
            others,
        });
    }
    let mut others = list("other_value")?;
    // As a feeder sees it: the field this board's commands carry is theirs.
    let fed_by = list("fed_by_other_value")?;
    others.extend(fed_by);
    if !others.is_empty() {
        let ours = def.operator.value_field();
        return Err(DefineError::FeedsValue {
            board: def.board.clone(),
            others,
            ours,
            theirs: if ours == "delta" {
                "a score"
            } else {
                "a delta"
            },
        });
    }
    if let Some(feeding) = list("feeding")?.first() {
        return Err(DefineError::FeedsLoop(format!(
            "board {feeding} feeds other boards, so {} may not feed it",
            def.board
        )));
    }
    if !feeds.is_empty()
        && let Some(feeder) = list("fed_by")?.first()
    {
        return Err(DefineError::FeedsLoop(format!(
            "board {} is fed by {feeder}, so it may not feed others",
            def.board
        )));
    }
    Ok(())
}

/// Whether `a` and `b` state the same definition (revision and declared aside).
fn same_declaration(a: &BoardDefinition, b: &BoardDefinition) -> bool {
    BoardDefinition {
        revision: 0,
        declared: true,
        ..a.clone()
    } == BoardDefinition {
        revision: 0,
        declared: true,
        ..b.clone()
    }
}

/// Declares an undeclared board (`lbctl board create`).
pub async fn declare(
    db: &Database,
    board: &BoardId,
    declaration: &Declaration,
) -> Result<Defined, DefineError> {
    let def = declaration.definition(board.clone())?;
    define(db, &def, Expect::Undeclared).await
}

/// Changes what `changes` states of the board's current definition (an undeclared board's is
/// the implicit one) and keeps the rest (`lbctl board update`). A definition changed by someone
/// else meanwhile is read again and the changes applied to it.
pub async fn update(
    db: &Database,
    board: &BoardId,
    changes: &Declaration,
) -> Result<Defined, DefineError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = get(db, board).await?;
        let def = changes.over(&current).definition(board.clone())?;
        match define(db, &def, Expect::Revision(current.revision)).await {
            Err(DefineError::Changed(_)) if attempt < MAX_ATTEMPTS => continue,
            other => return other,
        }
    }
}

/// Most definitions one page lists.
pub const MAX_PAGE: usize = 1_000;

/// Parameters: after, limit.
pub static LIST: Statement<2> = Statement::new(
    Op::BoardList,
    include_str!("../sql/definition_list.sql"),
    [Type::TEXT, Type::INT8],
);

/// Up to `limit` (at most [`MAX_PAGE`]) declared boards after `after`, in board id order.
pub async fn list(
    db: &Database,
    after: Option<&BoardId>,
    limit: usize,
) -> Result<Vec<BoardDefinition>, StoreError> {
    let limit = limit.min(MAX_PAGE) as i64;
    let after = after.map_or("", BoardId::as_str);
    let rows = db.query(&LIST, [&after, &limit]).await?;
    rows.iter()
        .map(|row| {
            let raw: String = row.try_get("board_id")?;
            // The table's CHECK keeps board ids to the alphabet BoardId accepts.
            let board = BoardId::parse(&raw).map_err(|_| {
                StoreError::SchemaMismatch(format!("board_definitions holds the board id {raw:?}"))
            })?;
            from_row(board, row)
        })
        .collect()
}
