//! The run's boards: one per operator and a season, each with its rule and its declaration,
//! and the lookups from a board id (a board or one of its periods) to its spec.

use std::collections::BTreeSet;

use anyhow::Context;
use ledgerboard_core::board::Operator;
use ledgerboard_core::board::definition::Sort;
use ledgerboard_core::model::BoardId;

use crate::stack::Stack;

/// One board of the run: its rule, and the definition the run declares for it (`PUT
/// /v1/boards/{board}` before the load), none for the undeclared add board.
pub(super) struct Spec {
    pub(super) name: &'static str,
    pub(super) operator: Operator,
    /// Which way is better: the operator's fold needs it for best, the checks for the order.
    pub(super) sort: Sort,
    pub(super) declaration: Option<&'static str>,
    /// The `n` of the board's `every <n>s` reset, for the board cut into periods (its
    /// declaration says the same; `declare` checks the api's answer against it).
    pub(super) period_secs: Option<i64>,
}

/// One board per operator, each checked against its own rule: an undeclared add board (deltas),
/// a best board that is a time trial (ascending, the earliest to reach a time ranks first) and
/// a latest board (descending, earliest). The scores submitted are within [`SCORES`], so the
/// ties the earliest boards order are many. And a season: a best board (descending, earliest)
/// that resets every 2 s, so that a 12 s run crosses several boundaries with commands in
/// flight; each period is a board of its own that starts from nothing, which `best` makes
/// visible (a member's best of the last period does not carry over).
pub(super) const SPECS: [Spec; 4] = [
    Spec {
        name: "chaos-a",
        operator: Operator::Add,
        sort: Sort::Descending,
        declaration: None,
        period_secs: None,
    },
    Spec {
        name: "chaos-b",
        operator: Operator::Best,
        sort: Sort::Ascending,
        declaration: Some(
            r#"{"display_name":"chaos time trial","operator":"best","sort":"ascending","tie_break":"earliest","min_score":0,"max_score":1000}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-c",
        operator: Operator::Latest,
        sort: Sort::Descending,
        declaration: Some(
            r#"{"operator":"latest","sort":"descending","tie_break":"earliest","min_score":0,"max_score":1000}"#,
        ),
        period_secs: None,
    },
    Spec {
        name: "chaos-d",
        operator: Operator::Best,
        sort: Sort::Descending,
        declaration: Some(
            r#"{"display_name":"chaos season","operator":"best","sort":"descending","tie_break":"earliest","min_score":0,"max_score":1000,"reset":"every 2s"}"#,
        ),
        period_secs: Some(2),
    },
];
pub(super) const BOARDS: [&str; 4] = [SPECS[0].name, SPECS[1].name, SPECS[2].name, SPECS[3].name];
/// The scores submitted to best and latest boards are below this (one more, a conflicting
/// reuse's value, is still within the declared bounds).
pub(super) const SCORES: u64 = 200;
pub(super) const USERS: u64 = 200;

const STORED_BOARDS: &str = include_str!("../sql/stored_boards.sql");

/// The run's board named `board` (one of [`BOARDS`]).
pub(super) fn spec(board: &str) -> &'static Spec {
    SPECS.iter().find(|s| s.name == board).unwrap_or(&SPECS[0])
}

/// The run's board a stored board id is, or is a period of: None for an id that is not one of
/// the run's, and for one that has a period exactly when its board does not reset (every
/// command of a board that resets lands in a period, none of another does).
pub(super) fn spec_of(board: &BoardId) -> Option<&'static Spec> {
    let spec = SPECS.iter().find(|s| s.name == board.base().as_str())?;
    (spec.period_secs.is_some() == board.period().is_some()).then_some(spec)
}

/// Whether a stored board id (a board or one of its periods, as PostgreSQL, the outbox and a
/// ban's answer name it) is one of the run's.
pub(super) fn of_the_run(board: &str) -> bool {
    BoardId::parse_stored(board)
        .ok()
        .as_ref()
        .and_then(spec_of)
        .is_some()
}

/// The boards the run compares, as stored: the boards that do not reset, and every period of
/// the one that does that holds an entry or an event (a period is a board of its own in
/// PostgreSQL and Redis; a period where nothing landed has nothing to compare). Any other board
/// id found is listed too, so that the checks report it.
pub(super) async fn run_boards(stack: &Stack) -> anyhow::Result<Vec<BoardId>> {
    let mut boards: BTreeSet<BoardId> = SPECS
        .iter()
        .filter(|s| s.period_secs.is_none())
        .map(|s| BoardId::parse(s.name))
        .collect::<Result<_, _>>()?;
    let client = stack.db.client().await?;
    for r in client.query(STORED_BOARDS, &[]).await? {
        let raw: String = r.try_get(0)?;
        boards.insert(BoardId::parse_stored(&raw).with_context(|| format!("board id {raw:?}"))?);
    }
    Ok(boards.into_iter().collect())
}
