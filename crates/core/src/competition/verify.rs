//! Verifying a competition's closed runs, oldest first (`lbctl competition verify`): each
//! run's record against its lines and the run before it (`sql/verify_run.sql`: digest, chain,
//! boards, moves), and each of its boards' frozen standings checked as a period's are
//! (`board::verification`'s checks and outcome, every board of the run in one statement:
//! `sql/verify_boards.sql`). The outcome is a period's three: a run
//! holds when its record and every board hold; it holds with explained changes when a board
//! does; anything else does not hold, and neither does any later run whose chain runs through
//! it.

use serde::Serialize;
use tokio_postgres::types::Type;

use crate::board::periods::{TIMEOUT, WHOLE_PERIOD_TIMEOUT};
use crate::board::verification::{self, Outcome};
use crate::db::{Database, Op, Statement, StoreError, commit};
use crate::model::BoardId;

/// Parameters: competition, run.
static VERIFY_RUN: Statement<2> = Statement::new(
    Op::CompetitionClose,
    include_str!("sql/verify_run.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: competition, after, limit.
static RUNS: Statement<3> = Statement::new(
    Op::Competition,
    include_str!("sql/runs.sql"),
    [Type::TEXT, Type::TEXT, Type::INT8],
);
/// Parameters: competition, run.
static VERIFY_BOARDS: Statement<2> = Statement::new(
    Op::CompetitionClose,
    include_str!("sql/verify_boards.sql"),
    [Type::TEXT, Type::TEXT],
);

/// One run's verification.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunVerification {
    pub run: String,
    pub outcome: Outcome,
    pub digest_matches: bool,
    /// Its `previous` is the digest of the closed run before it.
    pub chained: bool,
    pub boards: i64,
    pub boards_closed: i64,
    pub moves: i64,
    pub moves_disagree: i64,
    /// Boards whose standings hold, hold with explained changes, do not hold.
    pub boards_hold: i64,
    pub boards_explained: i64,
    pub boards_broken: i64,
    /// Why it does not hold, in words (empty when it holds).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// A competition's verification: every closed run, oldest first, and the outcome of the whole
/// history (the worst of its runs').
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Verification {
    pub competition: String,
    pub outcome: Outcome,
    pub runs: Vec<RunVerification>,
}

/// Runs read per page while verifying.
const PAGE: i64 = 100;

/// Verifies every closed run of the competition `id`, oldest first.
pub async fn verify(db: &Database, id: &BoardId) -> Result<Verification, StoreError> {
    let mut runs = Vec::new();
    let mut after = String::new();
    let mut broken_chain = false;
    loop {
        let page = db
            .query(&RUNS, [&id.as_str(), &after.as_str(), &PAGE])
            .await?;
        for row in &page {
            let run: String = row.try_get("run")?;
            let mut checked = verify_run(db, id, &run).await?;
            // A run after a broken one chains to a record that cannot be trusted.
            if broken_chain && checked.outcome.holds() {
                checked.outcome = Outcome::DoesNotHold;
                checked
                    .problems
                    .push("an earlier run does not hold, and this one chains to it".into());
            }
            broken_chain |= !checked.outcome.holds();
            after.clone_from(&run);
            runs.push(checked);
        }
        if (page.len() as i64) < PAGE {
            break;
        }
    }
    let outcome = runs.iter().map(|r| r.outcome).fold(Outcome::Holds, worst);
    Ok(Verification {
        competition: id.to_string(),
        outcome,
        runs,
    })
}

fn worst(a: Outcome, b: Outcome) -> Outcome {
    let rank = |o| match o {
        Outcome::Holds => 0,
        Outcome::HoldsWithExplainedChanges => 1,
        Outcome::DoesNotHold => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

async fn verify_run(db: &Database, id: &BoardId, run: &str) -> Result<RunVerification, StoreError> {
    let Some(r) = db.query_opt(&VERIFY_RUN, [&id.as_str(), &run]).await? else {
        return Err(StoreError::Internal(format!(
            "run {run} of {id} is not closed"
        )));
    };
    let mut checked = RunVerification {
        run: run.to_owned(),
        outcome: Outcome::Holds,
        digest_matches: r
            .try_get::<_, Option<bool>>("digest_matches")?
            .unwrap_or(false),
        chained: r.try_get::<_, Option<bool>>("chained")?.unwrap_or(false),
        boards: r.try_get("boards")?,
        boards_closed: r.try_get::<_, Option<i64>>("boards_closed")?.unwrap_or(-1),
        moves: r.try_get("moves")?,
        moves_disagree: r.try_get("moves_disagree")?,
        boards_hold: 0,
        boards_explained: 0,
        boards_broken: 0,
        problems: Vec::new(),
    };
    // Every board of the run in one statement, bounded as a period's verification is.
    let mut client = db.client().await?;
    let tx = client.transaction().await?;
    let stmts = db.statements();
    let bound = format!("{}ms", WHOLE_PERIOD_TIMEOUT.as_millis());
    stmts.query(&tx, &TIMEOUT, [&bound]).await?;
    let boards = stmts
        .query(&tx, &VERIFY_BOARDS, [&id.as_str(), &run])
        .await?;
    commit(tx).await?;
    for board in &boards {
        let key: String = board.try_get("period")?;
        let v = verification::of_row(board)?;
        match v.outcome() {
            Outcome::Holds => checked.boards_hold += 1,
            Outcome::HoldsWithExplainedChanges => checked.boards_explained += 1,
            Outcome::DoesNotHold => {
                checked.boards_broken += 1;
                checked
                    .problems
                    .push(format!("board {key}: {}", v.describe()));
            }
        }
    }
    if !checked.digest_matches {
        checked
            .problems
            .push("the run's digest does not match its record".into());
    }
    if !checked.chained {
        checked
            .problems
            .push("the run's previous digest is not the run before it".into());
    }
    if checked.boards != checked.boards_closed {
        checked.problems.push(format!(
            "{} boards closed, {} recorded",
            checked.boards, checked.boards_closed
        ));
    }
    if checked.moves_disagree > 0 {
        checked.problems.push(format!(
            "{} moves differ from the frozen standings'",
            checked.moves_disagree
        ));
    }
    checked.outcome = if !checked.problems.is_empty() {
        Outcome::DoesNotHold
    } else if checked.boards_explained > 0 {
        Outcome::HoldsWithExplainedChanges
    } else {
        Outcome::Holds
    };
    Ok(checked)
}
