//! What the clients and the moderation loop learned from the api's answers, shared between
//! them: the ledger the final check holds PostgreSQL and Redis to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::moderation;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Command {
    pub(super) board: &'static str,
    pub(super) user: String,
    /// The delta of an add board, the score submitted to a best or latest one.
    pub(super) value: i64,
}

/// What a command's answer stated: the member's score and version, and on a board that
/// resets the period the command landed in (a duplicate must state the first answer's, period
/// included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Outcome {
    pub(super) score: i64,
    pub(super) version: i64,
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
}

/// The ledger, also after a client panicked while holding it (its data is still whole).
pub(super) fn lock(ledger: &Mutex<Ledger>) -> std::sync::MutexGuard<'_, Ledger> {
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

/// The score, version and period a command's answer states.
pub(super) fn outcome(body: &str) -> Option<Outcome> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    Some(Outcome {
        score: v["score"].as_i64()?,
        version: v["version"].as_i64()?,
        period: v["period"].as_str().map(str::to_owned),
    })
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
                version: 3,
                period: Some("20261202T074744Z".to_owned()),
            })
        );
        assert_eq!(
            outcome(r#"{"score":-4,"version":1}"#),
            Some(Outcome {
                score: -4,
                version: 1,
                period: None,
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
        ] {
            assert_eq!(outcome(body), None, "{body}");
        }
    }
}
