//! What the clients and the moderation loop learned from the api's answers, shared between
//! them: the ledger the final check holds PostgreSQL and Redis to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ledgerboard_core::board::Values;
use uuid::Uuid;

use super::moderation;
use super::specs::{self, Spec};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Command {
    pub(super) board: &'static str,
    pub(super) user: String,
    /// The delta of an add board, the score submitted to a best or latest one: the first
    /// column's, and the other columns' in order-key form (`model::Columns::key`; 0 past the
    /// board's columns), as `score_events` records them and the fold takes them.
    pub(super) value: Values,
}

/// What a command's answer stated: the member's score (on a board with columns, every column
/// in `scores`), version and `improved`, on a board that resets the period the command landed
/// in, and on a board that feeds others each fed board's outcome. A duplicate must state the
/// first answer's, period and fed boards included (`duplicate` aside, which is not kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Outcome {
    pub(super) score: i64,
    pub(super) scores: Option<Vec<i64>>,
    pub(super) version: i64,
    pub(super) improved: Option<bool>,
    pub(super) period: Option<String>,
    pub(super) linked: Vec<FedAnswer>,
}

/// One fed board's outcome in an answer's `linked`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FedAnswer {
    pub(super) board: String,
    pub(super) score: i64,
    pub(super) scores: Option<Vec<i64>>,
    pub(super) version: i64,
    pub(super) improved: bool,
    pub(super) period: Option<String>,
}

/// A command accepted on a board that resets: the period its answer named, and when (local
/// clock, seconds since the Unix epoch) its first attempt was sent and its last answer came.
/// The check holds the command to that period, and the period to that time: the statement read
/// the database clock in between.
#[derive(Clone, Debug)]
pub(super) struct Landed {
    pub(super) period: String,
    pub(super) sent: f64,
    pub(super) answered: f64,
}

/// What the clients learned, shared between them.
#[derive(Default)]
pub(super) struct Ledger {
    /// Commands the api accepted (201, or 200 after an attempt whose answer was lost).
    pub(super) accepted: HashMap<Uuid, Command>,
    /// Their event ids in the order they were accepted (a repeatable pick for duplicates), and
    /// what the first answer stated.
    pub(super) order: Vec<(Uuid, Option<Outcome>)>,
    /// The accepted commands on a board that resets, with the period their answer named.
    pub(super) landed: HashMap<Uuid, Landed>,
    /// Commands whose outcome no answer told within the settle limit.
    pub(super) unresolved: HashMap<Uuid, Command>,
    /// New commands a board of their set must refuse (a value past its bounds), answered 422
    /// naming that board (or, unanswered, refused all the same: the refusal is the
    /// validation's): no event of theirs may exist on any board.
    pub(super) refused: HashMap<Uuid, Command>,
    pub(super) sent: u64,
    pub(super) duplicates_confirmed: u64,
    pub(super) conflicts_refused: u64,
    pub(super) retries: u64,
    /// Answers that break the contract, as they came.
    pub(super) violations: Vec<String>,
    /// Members with a client's command in flight, and how many (`moderation::InFlight`): the
    /// moderation loop races removals against them.
    pub(super) in_flight: HashMap<(&'static str, String), usize>,
    /// The moderation loop's actions and answers.
    pub(super) moderation: moderation::ModerationLedger,
    /// The players' client's figures (`players.rs`).
    pub(super) players: PlayerFigures,
}

/// What the players' client counts: attempts started, scores sent with them, and the forged,
/// expired and replayed requests and other players' attempts refused with their own code.
#[derive(Debug, Default, Clone)]
pub(super) struct PlayerFigures {
    pub(super) attempts_started: u64,
    pub(super) scores_sent: u64,
    pub(super) attacks_refused: u64,
}

/// The ledger, also after a client panicked while holding it (its data is still whole).
pub(super) fn lock<T>(ledger: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    ledger
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A client's command of one member in flight, in the ledger while it is (until its answer):
/// the loop aims half of its removals at such members, to race them.
pub(super) struct InFlight {
    ledger: Arc<Mutex<Ledger>>,
    member: (&'static str, String),
}

impl InFlight {
    pub(super) fn begin(ledger: &Arc<Mutex<Ledger>>, board: &'static str, user: &str) -> Self {
        let member = (board, user.to_owned());
        *lock(ledger).in_flight.entry(member.clone()).or_default() += 1;
        Self {
            ledger: ledger.clone(),
            member,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut l = lock(&self.ledger);
        if let Some(n) = l.in_flight.get_mut(&self.member) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                l.in_flight.remove(&self.member);
            }
        }
    }
}

/// What a command's answer states; None when its score, version, `scores` or a `linked` entry
/// is not what an answer holds.
pub(super) fn outcome(body: &str) -> Option<Outcome> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let linked = match v.get("linked") {
        None => Vec::new(),
        Some(linked) => linked
            .as_array()?
            .iter()
            .map(|f| {
                Some(FedAnswer {
                    board: f["board"].as_str()?.to_owned(),
                    score: f["score"].as_i64()?,
                    scores: scores(f)?,
                    version: f["version"].as_i64()?,
                    improved: f["improved"].as_bool()?,
                    period: f["period"].as_str().map(str::to_owned),
                })
            })
            .collect::<Option<_>>()?,
    };
    Some(Outcome {
        score: v["score"].as_i64()?,
        scores: scores(&v)?,
        version: v["version"].as_i64()?,
        improved: v["improved"].as_bool(),
        period: v["period"].as_str().map(str::to_owned),
        linked,
    })
}

/// An answer's `scores`: `Some(None)` when absent, None when it is not an array of integers.
fn scores(v: &serde_json::Value) -> Option<Option<Vec<i64>>> {
    match v.get("scores") {
        None => Some(None),
        Some(s) => Some(Some(
            s.as_array()?
                .iter()
                .map(serde_json::Value::as_i64)
                .collect::<Option<_>>()?,
        )),
    }
}

/// What is wrong with an accepted command's answer for its board, if anything: `scores` on a
/// board with columns (one per column, the first the score) and on no other, each fed board
/// in `linked` in declared order and none on a board that feeds none, a fed board's
/// `duplicate` the answer's (a repeat repeats every board) and its period only where that
/// board resets (the answer's own period the client checks against the ledger).
pub(super) fn answer_problem(spec: &Spec, body: &str) -> Option<String> {
    let Some(stated) = outcome(body) else {
        return Some("not an outcome".to_owned());
    };
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let shape = |spec: &Spec, score: i64, scores: &Option<Vec<i64>>| {
        let count = spec.columns().count();
        match scores {
            None => count == 1,
            Some(s) => count > 1 && s.len() == count && s.first() == Some(&score),
        }
    };
    if !shape(spec, stated.score, &stated.scores) {
        return Some(format!(
            "scores {:?} on a board of {} column(s)",
            stated.scores,
            spec.columns().count()
        ));
    }
    let boards: Vec<&str> = stated.linked.iter().map(|f| f.board.as_str()).collect();
    if boards != spec.feeds {
        return Some(format!(
            "linked {boards:?}, the board feeds {:?}",
            spec.feeds
        ));
    }
    let duplicate = v["duplicate"].as_bool();
    let raws = v["linked"].as_array().into_iter().flatten();
    for (f, raw) in stated.linked.iter().zip(raws) {
        let fed = specs::spec(&f.board);
        if !shape(fed, f.score, &f.scores)
            || f.period.is_some() != fed.period_secs.is_some()
            || raw["duplicate"].as_bool() != duplicate
        {
            return Some(format!(
                "linked entry {raw} in an answer with duplicate {duplicate:?}"
            ));
        }
    }
    None
}

/// Now by the local clock, in seconds since the Unix epoch.
pub(super) fn epoch_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_states_score_version_and_period() {
        let body = r#"{"event_id":"e","score":12,"version":3,"period":"20261202T074744Z","duplicate":false}"#;
        assert_eq!(
            outcome(body),
            Some(Outcome {
                score: 12,
                scores: None,
                version: 3,
                improved: None,
                period: Some("20261202T074744Z".to_owned()),
                linked: Vec::new(),
            })
        );
        assert_eq!(
            outcome(r#"{"score":-4,"version":1}"#),
            Some(Outcome {
                score: -4,
                scores: None,
                version: 1,
                improved: None,
                period: None,
                linked: Vec::new(),
            })
        );
    }

    #[test]
    fn an_answer_without_an_integer_score_or_version_states_nothing() {
        for body in [
            "",
            "not json",
            r#"{"version":1}"#,
            r#"{"score":1}"#,
            r#"{"score":1.5,"version":1}"#,
            r#"{"score":"1","version":1}"#,
            r#"{"error":{"code":"event_id_reused"}}"#,
            // Columns that are not integers, or a fed board's outcome without its version.
            r#"{"score":1,"scores":[1,"2"],"version":1}"#,
            r#"{"score":1,"version":1,"linked":[{"board":"g","score":1,"improved":true}]}"#,
        ] {
            assert_eq!(outcome(body), None, "{body}");
        }
    }

    const SOURCE: &str = r#"{"event_id":"e","score":7,"scores":[7,30],"version":2,"duplicate":false,"improved":true,"linked":[{"board":"chaos-g","score":7,"scores":[7,30],"version":4,"duplicate":false,"improved":true},{"board":"chaos-h","score":9,"scores":[9,1],"version":1,"duplicate":false,"improved":false}]}"#;

    #[test]
    fn an_answer_on_a_linked_source_states_every_fed_board() {
        let stated = outcome(SOURCE).expect("an outcome");
        assert_eq!(stated.scores, Some(vec![7, 30]));
        assert_eq!(stated.improved, Some(true));
        assert_eq!(
            stated.linked[1],
            FedAnswer {
                board: "chaos-h".to_owned(),
                score: 9,
                scores: Some(vec![9, 1]),
                version: 1,
                improved: false,
                period: None,
            }
        );
        // A repeat states the same (its `duplicate` flags aside); another fed version does not.
        let repeat = SOURCE.replace(r#""duplicate":false"#, r#""duplicate":true"#);
        assert_eq!(outcome(&repeat), Some(stated.clone()));
        let other = SOURCE.replace(r#""version":4"#, r#""version":5"#);
        assert_ne!(outcome(&other), Some(stated));
    }

    #[test]
    fn an_answer_must_have_the_shape_of_its_board() {
        let source = specs::spec("chaos-f");
        assert_eq!(answer_problem(source, SOURCE), None);
        // A fed board missing, or in another order.
        let one = SOURCE.replace(r#"{"board":"chaos-g""#, r#"{"board":"chaos-x""#);
        assert!(answer_problem(source, &one).is_some());
        // A repeat whose fed board says it was applied anew.
        let mixed = SOURCE.replacen(r#""duplicate":false"#, r#""duplicate":true"#, 1);
        assert!(answer_problem(source, &mixed).is_some());
        // scores of the wrong length, or whose first is not the score.
        let short = SOURCE.replacen("[7,30]", "[7]", 1);
        assert!(answer_problem(source, &short).is_some());
        let first = SOURCE.replacen("[7,30]", "[8,30]", 1);
        assert!(answer_problem(source, &first).is_some());
        // A fed board states its outcome as a board of its own: no linked list of its own, and
        // a board of one column no scores.
        assert!(answer_problem(specs::spec("chaos-g"), SOURCE).is_some());
        let plain = r#"{"score":3,"version":1,"duplicate":false,"improved":true}"#;
        assert_eq!(answer_problem(specs::spec("chaos-c"), plain), None);
        assert!(answer_problem(specs::spec("chaos-e"), plain).is_some());
        let with_scores = r#"{"score":3,"scores":[3],"version":1,"duplicate":false}"#;
        assert!(answer_problem(specs::spec("chaos-c"), with_scores).is_some());
    }
}
