//! Where board definitions live (`board_definitions`, migration V5), how they are declared,
//! changed and listed (the api's `PUT /v1/boards/{board}`, `lbctl board`), and the api's
//! short-lived cache of them. A command carries the revision it was validated against and its
//! statement refuses any other, so a cached definition can be late but never applied wrongly.
//!
//! A board's rule (operator, sort, tie break) changes only while it has no entries: its entries
//! were applied under the rule and are ordered by it. [`define`] checks that in the statement
//! that writes the definition, under a table lock that keeps commands from adding an entry
//! between the check and the commit (`sql/definition_define.sql`,
//! `sql/definition_lock_entries.sql`). Bounds and the display name may change at any time; they
//! apply to the commands that follow (scores already held stay as they are).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_postgres::Row;
use tokio_postgres::types::Type;

use super::schedule;
use crate::db::{Database, Op, Statement, StoreError, commit};
use crate::definition::{
    BoardDefinition, DEFAULT_TIME_ZONE, MAX_DISPLAY_NAME_CHARS, Operator, Reset, Sort, TieBreak,
};
use crate::domain::{BoardId, MAX_ABS_SCORE, MAX_DELTA, MIN_DELTA};

/// Parameters: board.
pub static GET: Statement<1> = Statement::new(
    Op::BoardDefinition,
    include_str!("sql/definition_get.sql"),
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
        revision: row.try_get("revision")?,
        declared: true,
        board,
    })
}

/// Why a declaration was refused before anything was written. `code()` is the stable name the
/// api puts in its error body (422).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    #[error("operator must be one of add, best, latest")]
    Operator,
    #[error("sort must be descending or ascending")]
    Sort,
    #[error("tie_break must be user_id or earliest")]
    TieBreak,
    #[error(
        "min_score and max_score must be integers within ±{MAX_ABS_SCORE} (2^53 - 1, where a Redis score is exact), min_score <= max_score"
    )]
    ScoreBounds,
    #[error(
        "min_delta and max_delta must be integers within ±{MAX_ABS_SCORE}, min_delta <= max_delta"
    )]
    DeltaBounds,
    #[error(
        "min_delta and max_delta apply to add boards only; a {0} board takes a score within min_score and max_score"
    )]
    DeltaBoundsNotAllowed(&'static str),
    #[error(
        "display_name must be at most {MAX_DISPLAY_NAME_CHARS} characters without control characters"
    )]
    DisplayName,
    #[error(
        "reset must be never, manual, daily, weekly, monthly, \"every <n>s\" (n from 1 to 99999999) or a five-field cron expression that fires at least once in 8 years (minute hour day-of-month month day-of-week, such as \"0 0 * * MON\")"
    )]
    Reset,
    #[error("time_zone must be an IANA time zone name PostgreSQL knows (such as Europe/Paris)")]
    TimeZone,
}

impl DefinitionError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Operator => "invalid_operator",
            Self::Sort => "invalid_sort",
            Self::TieBreak => "invalid_tie_break",
            Self::ScoreBounds => "invalid_score_bounds",
            Self::DeltaBounds => "invalid_delta_bounds",
            Self::DeltaBoundsNotAllowed(_) => "delta_bounds_not_allowed",
            Self::DisplayName => "invalid_display_name",
            Self::Reset => "invalid_reset",
            Self::TimeZone => "invalid_time_zone",
        }
    }
}

/// A definition as an operator states it: what is left out takes its default when the
/// declaration replaces a definition ([`Declaration::definition`]: descending, ties by user id,
/// scores within ±(2^53 − 1), deltas within ±1000 on add boards, no display name), or keeps the
/// current value when it amends one ([`Declaration::over`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declaration {
    pub display_name: Option<String>,
    /// Required to replace a definition.
    pub operator: Option<Operator>,
    pub sort: Option<Sort>,
    pub tie_break: Option<TieBreak>,
    pub min_score: Option<i64>,
    pub max_score: Option<i64>,
    pub min_delta: Option<i64>,
    pub max_delta: Option<i64>,
    pub reset: Option<Reset>,
    pub time_zone: Option<String>,
}

/// A reset as sent.
pub fn parse_reset(raw: &str) -> Result<Reset, DefinitionError> {
    Reset::parse(raw).ok_or(DefinitionError::Reset)
}

/// The names as sent (api bodies, lbctl flags), each refused with its own error.
pub fn parse_operator(raw: &str) -> Result<Operator, DefinitionError> {
    Operator::parse(raw).ok_or(DefinitionError::Operator)
}
pub fn parse_sort(raw: &str) -> Result<Sort, DefinitionError> {
    Sort::parse(raw).ok_or(DefinitionError::Sort)
}
pub fn parse_tie_break(raw: &str) -> Result<TieBreak, DefinitionError> {
    TieBreak::parse(raw).ok_or(DefinitionError::TieBreak)
}

impl Declaration {
    /// The whole definition this declaration states for `board`, checked (revision 0: the
    /// store sets it).
    pub fn definition(&self, board: BoardId) -> Result<BoardDefinition, DefinitionError> {
        let operator = self.operator.ok_or(DefinitionError::Operator)?;
        let display_name = self.display_name.clone().unwrap_or_default();
        if display_name.chars().count() > MAX_DISPLAY_NAME_CHARS
            || display_name.chars().any(char::is_control)
        {
            return Err(DefinitionError::DisplayName);
        }
        let exact = |v: i64| (-MAX_ABS_SCORE..=MAX_ABS_SCORE).contains(&v);
        let min_score = self.min_score.unwrap_or(-MAX_ABS_SCORE);
        let max_score = self.max_score.unwrap_or(MAX_ABS_SCORE);
        if !exact(min_score) || !exact(max_score) || min_score > max_score {
            return Err(DefinitionError::ScoreBounds);
        }
        let (min_delta, max_delta) = match operator {
            Operator::Add => {
                let min = self.min_delta.unwrap_or(MIN_DELTA);
                let max = self.max_delta.unwrap_or(MAX_DELTA);
                if !exact(min) || !exact(max) || min > max {
                    return Err(DefinitionError::DeltaBounds);
                }
                (Some(min), Some(max))
            }
            Operator::Best | Operator::Latest => {
                if self.min_delta.is_some() || self.max_delta.is_some() {
                    return Err(DefinitionError::DeltaBoundsNotAllowed(operator.as_str()));
                }
                (None, None)
            }
        };
        let time_zone = self
            .time_zone
            .clone()
            .unwrap_or_else(|| DEFAULT_TIME_ZONE.to_owned());
        // The names PostgreSQL knows are checked when it is written ([`define`]); this only
        // keeps what no zone is called out of the query.
        if time_zone.is_empty()
            || time_zone.len() > 64
            || !time_zone
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b))
        {
            return Err(DefinitionError::TimeZone);
        }
        Ok(BoardDefinition {
            board,
            display_name,
            operator,
            reset: self.reset.clone().unwrap_or(Reset::Never),
            time_zone,
            sort: self.sort.unwrap_or(Sort::Descending),
            tie_break: self.tie_break.unwrap_or(TieBreak::UserId),
            min_score,
            max_score,
            min_delta,
            max_delta,
            revision: 0,
            declared: true,
        })
    }

    /// This declaration as a change of `current`: what it leaves out keeps its current value.
    /// Delta bounds go when the operator leaves `add`, and take their defaults when it becomes
    /// `add` (unless stated).
    pub fn over(&self, current: &BoardDefinition) -> Declaration {
        let operator = self.operator.unwrap_or(current.operator);
        let keeps_deltas = operator == Operator::Add;
        Declaration {
            display_name: Some(
                self.display_name
                    .clone()
                    .unwrap_or_else(|| current.display_name.clone()),
            ),
            operator: Some(operator),
            sort: Some(self.sort.unwrap_or(current.sort)),
            tie_break: Some(self.tie_break.unwrap_or(current.tie_break)),
            min_score: Some(self.min_score.unwrap_or(current.min_score)),
            max_score: Some(self.max_score.unwrap_or(current.max_score)),
            min_delta: self
                .min_delta
                .or(current.min_delta.filter(|_| keeps_deltas)),
            max_delta: self
                .max_delta
                .or(current.max_delta.filter(|_| keeps_deltas)),
            reset: Some(self.reset.clone().unwrap_or_else(|| current.reset.clone())),
            time_zone: Some(
                self.time_zone
                    .clone()
                    .unwrap_or_else(|| current.time_zone.clone()),
            ),
        }
    }
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
        "board {board} has entries, applied as {operator}, {sort}, ties by {tie_break}, reset {reset} in {time_zone}: its operator, sort, tie_break, reset and time_zone cannot change (bounds and display_name can)"
    )]
    HasEntries {
        board: BoardId,
        operator: &'static str,
        sort: &'static str,
        tie_break: &'static str,
        reset: String,
        time_zone: String,
    },
    /// [`Expect::Undeclared`], and the board is declared.
    #[error("board {0} is already declared (change it with update)")]
    AlreadyDeclared(BoardId),
    /// [`Expect::Revision`], and the definition has another revision now.
    #[error("board {0}'s definition changed meanwhile; read it again")]
    Changed(BoardId),
    #[error(transparent)]
    Store(#[from] StoreError),
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
    include_str!("sql/definition_lock_timeout.sql"),
    [Type::TEXT],
);

pub static LOCK_ENTRIES: Statement<0> = Statement::new(
    Op::BoardDefine,
    include_str!("sql/definition_lock_entries.sql"),
    [],
);

/// Parameters: board, display name, operator, sort, tie break, min and max score, min and max
/// delta, the revision read, reset, time zone.
pub static DEFINE: Statement<12> = Statement::new(
    Op::BoardDefine,
    include_str!("sql/definition_define.sql"),
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
    ],
);

/// Parameters: time zone. Whether PostgreSQL knows the zone.
pub static TIME_ZONE_KNOWN: Statement<1> = Statement::new(
    Op::BoardDefine,
    include_str!("sql/definition_time_zone.sql"),
    [Type::TEXT],
);

/// Parameters: board. Opens the first period of a board declared with a reset.
pub static OPEN_FIRST_PERIOD: Statement<1> = Statement::new(
    Op::BoardDefine,
    include_str!("sql/definition_first_period.sql"),
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
    include_str!("sql/definition_list.sql"),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> BoardId {
        BoardId::parse("weekly").expect("board")
    }

    fn add() -> Declaration {
        Declaration {
            operator: Some(Operator::Add),
            ..Declaration::default()
        }
    }

    #[test]
    fn what_is_left_out_takes_todays_defaults() {
        let def = add().definition(board()).expect("valid");
        let implicit = BoardDefinition::implicit(board());
        // Declared with nothing but its operator, an add board is today's board.
        assert_eq!(
            BoardDefinition {
                declared: false,
                ..def
            },
            implicit
        );
        assert_eq!(
            Declaration::default().definition(board()),
            Err(DefinitionError::Operator)
        );
    }

    #[test]
    fn bounds_and_names_are_checked() {
        let with = |f: fn(&mut Declaration)| {
            let mut d = add();
            f(&mut d);
            d.definition(board()).map(|_| ())
        };
        assert_eq!(
            with(|d| d.min_score = Some(-MAX_ABS_SCORE - 1)),
            Err(DefinitionError::ScoreBounds)
        );
        assert_eq!(
            with(|d| d.max_score = Some(MAX_ABS_SCORE + 1)),
            Err(DefinitionError::ScoreBounds)
        );
        assert_eq!(
            with(|d| {
                d.min_score = Some(5);
                d.max_score = Some(4)
            }),
            Err(DefinitionError::ScoreBounds)
        );
        assert_eq!(
            with(|d| {
                d.min_score = Some(5);
                d.max_score = Some(5)
            }),
            Ok(())
        );
        assert_eq!(
            with(|d| {
                d.min_delta = Some(1);
                d.max_delta = Some(0)
            }),
            Err(DefinitionError::DeltaBounds)
        );
        assert_eq!(
            with(|d| d.max_delta = Some(MAX_ABS_SCORE + 1)),
            Err(DefinitionError::DeltaBounds)
        );
        assert_eq!(with(|d| d.display_name = Some("é".repeat(128))), Ok(()));
        assert_eq!(
            with(|d| d.display_name = Some("é".repeat(129))),
            Err(DefinitionError::DisplayName)
        );
        assert_eq!(
            with(|d| d.display_name = Some("a\0b".into())),
            Err(DefinitionError::DisplayName)
        );
        let best = Declaration {
            operator: Some(Operator::Best),
            min_delta: Some(0),
            ..Declaration::default()
        };
        assert_eq!(
            best.definition(board()),
            Err(DefinitionError::DeltaBoundsNotAllowed("best"))
        );
        assert_eq!(
            best.definition(board()).map_err(|e| e.code()),
            Err("delta_bounds_not_allowed")
        );
        assert_eq!(parse_sort("up"), Err(DefinitionError::Sort));
        assert_eq!(parse_tie_break("earliest"), Ok(TieBreak::Earliest));
    }

    #[test]
    fn an_amendment_keeps_what_it_does_not_state() {
        let current = Declaration {
            display_name: Some("Weekly".into()),
            operator: Some(Operator::Add),
            min_delta: Some(0),
            max_delta: Some(10),
            ..Declaration::default()
        }
        .definition(board())
        .expect("valid");
        let renamed = Declaration {
            max_delta: Some(20),
            ..Declaration::default()
        }
        .over(&current)
        .definition(board())
        .expect("valid");
        assert_eq!(
            (
                renamed.display_name.as_str(),
                renamed.min_delta,
                renamed.max_delta
            ),
            ("Weekly", Some(0), Some(20))
        );
        // Leaving add drops the delta bounds rather than refusing them.
        let best = Declaration {
            operator: Some(Operator::Best),
            ..Declaration::default()
        }
        .over(&current)
        .definition(board())
        .expect("valid");
        assert_eq!((best.min_delta, best.max_delta), (None, None));
    }
}
