//! The load: one client sends new commands (some past a bound of a board of their linked set,
//! which must refuse them whole), duplicates and conflicting reuses through the api until the
//! deadline, and records every answer in the ledger.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ledgerboard_core::board::{Value, Values};
use ledgerboard_harness::http;
use uuid::Uuid;

use super::api::{REQUEST_LIMIT, SETTLE_LIMIT};
use super::ledger::{
    Command, InFlight, Landed, Ledger, Outcome, answer_problem, epoch_secs, lock, outcome,
};
use super::rng::Rng;
use super::specs::{BOARDS, Spec, USERS, spec};

/// One client: new commands, duplicates of accepted ones, and conflicting reuses, until the
/// deadline; a command whose answer is lost is sent again until an answer says what happened.
pub(super) async fn client(
    api: std::net::SocketAddr,
    bearer: String,
    ledger: Arc<Mutex<Ledger>>,
    mut rng: Rng,
    deadline: Instant,
) {
    while Instant::now() < deadline {
        let roll = rng.below(100);
        let known = {
            let l = lock(&ledger);
            if l.order.is_empty() || roll >= 15 {
                None
            } else {
                let (event, first) = &l.order[rng.below(l.order.len() as u64) as usize];
                l.accepted
                    .get(event)
                    .map(|c| (*event, c.clone(), first.clone()))
            }
        };
        let (event, command, kind) = match known {
            // A duplicate: the same command again must answer 200 with the first outcome.
            Some((event, command, first)) if roll < 10 => {
                (event, command, Sending::Duplicate(first))
            }
            // A conflicting reuse: the same event id with another value must be refused, on
            // every board of a linked set alike.
            Some((event, mut command, _)) => {
                command.value = reused(spec(command.board), command.value);
                (event, command, Sending::Reuse)
            }
            None => {
                let event = rng.uuid();
                let board = BOARDS[rng.below(BOARDS.len() as u64) as usize];
                let user = format!("user-{:03}", rng.below(USERS));
                let value = drawn(spec(board), &mut rng);
                let command = Command { board, user, value };
                match spec(board).refused_by(value.0) {
                    Some(by) => (event, command, Sending::Refused(by)),
                    None => (event, command, Sending::New),
                }
            }
        };
        // The member of every board the command reaches is in flight: the moderation loop
        // races removals against them.
        let set = spec(command.board).feeds.iter().copied();
        let _in_flight: Vec<InFlight> = std::iter::once(command.board)
            .chain(set)
            .map(|board| InFlight::begin(&ledger, board, &command.user))
            .collect();
        let sent = epoch_secs();
        let (status, body, retries) = send(api, &bearer, event, &command, None, deadline).await;
        let answered = epoch_secs();
        let mut l = lock(&ledger);
        l.sent += 1 + retries;
        l.retries += retries;
        match kind {
            Sending::Duplicate(first) => {
                // Period and fed boards included: a repeat names the first run's period, even
                // after a reset, and every fed board's first outcome.
                let same_outcome = first.is_none_or(|f| outcome(&body) == Some(f));
                if status == Some(200)
                    && body.contains(r#""duplicate":true"#)
                    && same_outcome
                    && answer_problem(spec(command.board), &body).is_none()
                {
                    l.duplicates_confirmed += 1;
                } else if status.is_some() {
                    l.violations
                        .push(format!("duplicate of {event} answered {status:?}: {body}"));
                }
            }
            Sending::Reuse => {
                if status == Some(409) {
                    l.conflicts_refused += 1;
                } else if status.is_some() {
                    l.violations.push(format!(
                        "conflicting reuse of {event} answered {status:?}: {body}"
                    ));
                }
            }
            Sending::Refused(by) => {
                // Refused whatever the answer (the refusal is the validation's): the check
                // holds every board to having no event of it.
                if status.is_some() && !refusal_names(status, &body, by) {
                    l.violations.push(format!(
                        "command {event} on {} past the bounds of {} answered {status:?}: {body}",
                        command.board,
                        by.unwrap_or(command.board)
                    ));
                }
                l.refused.insert(event, command);
            }
            Sending::New => {
                record_new(
                    &mut l, event, command, status, &body, retries, sent, answered,
                );
            }
        }
    }
}

/// Records what the answer to a new command says happened to it: accepted (201, or a 200
/// repeat after a lost answer), unresolved (no answer), or a violation.
#[allow(clippy::too_many_arguments)]
pub(super) fn record_new(
    l: &mut Ledger,
    event: Uuid,
    command: Command,
    status: Option<u16>,
    body: &str,
    retries: u64,
    sent: f64,
    answered: f64,
) {
    match status {
        // 200: an earlier attempt committed but its answer was lost; the duplicate's
        // answer is the first run's, period included.
        Some(201) | Some(200)
            if status == Some(201) || retries > 0 && body.contains(r#""duplicate":true"#) =>
        {
            if let Some(problem) = answer_problem(spec(command.board), body) {
                l.violations.push(format!(
                    "command {event} on {}: {problem}: {body}",
                    command.board
                ));
            }
            let stated = outcome(body);
            let period = stated.as_ref().and_then(|o| o.period.clone());
            match (spec(command.board).period_secs, period) {
                (Some(_), Some(period)) => {
                    l.landed.insert(
                        event,
                        Landed {
                            period,
                            sent,
                            answered,
                        },
                    );
                }
                (None, None) => {}
                (resets, period) => l.violations.push(format!(
                    "command {event} on {} (resets: {}) answered with period {period:?}: {body}",
                    command.board,
                    resets.is_some()
                )),
            }
            l.accepted.insert(event, command);
            l.order.push((event, stated));
        }
        None => {
            l.unresolved.insert(event, command);
        }
        Some(s) => l
            .violations
            .push(format!("new command {event} answered {s}: {body}")),
    }
}

/// A new command's value for `spec`'s board: on an add board a delta within ±100 (never 0)
/// per column, else a score below the board's draw per column; the other columns in
/// order-key form.
pub(super) fn drawn(spec: &Spec, rng: &mut Rng) -> Values {
    let raw: Vec<i64> = (0..spec.columns().count())
        .map(|_| {
            if spec.operator.value() == Value::Delta {
                let magnitude = 1 + rng.below(100) as i64;
                if rng.below(2) == 0 {
                    magnitude
                } else {
                    -magnitude
                }
            } else {
                rng.below(spec.draw.unsigned_abs()) as i64
            }
        })
        .collect();
    spec.keyed(&raw)
}

/// A conflicting reuse's value: the board's last column one more (a delta of -1 becomes 1, so
/// never 0). Scores are below the board's draw, and the draw is below every bound declared, so
/// the value stays one every board of the set takes: the refusal is the reuse's, 409, not a
/// bound's, 422.
pub(super) fn reused(spec: &Spec, value: Values) -> Values {
    let mut raw = spec.raw(value);
    if let Some(last) = raw.last_mut() {
        *last = if spec.operator.value() == Value::Delta && *last == -1 {
            1
        } else {
            *last + 1
        };
    }
    spec.keyed(&raw)
}

/// Whether an answer is the refusal of a value past a board's bounds: 422, naming the fed
/// board that refused it (`error.board`), or no board when the board sent to refused it.
fn refusal_names(status: Option<u16>, body: &str, by: Option<&str>) -> bool {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    status == Some(422) && v["error"]["board"].as_str() == by
}

/// What a client sends: a new command, one that a board of its set must refuse (by the board
/// sent to, None, or by the fed board named), a duplicate of an accepted one (with what its
/// first answer stated), or a reuse of an accepted one's id with another value.
enum Sending {
    New,
    Refused(Option<&'static str>),
    Duplicate(Option<Outcome>),
    Reuse,
}

/// Sends a command until an answer says what happened to it (2xx or 4xx); 5xx answers and
/// transport errors are retried, which the event id makes harmless. Returns the final answer
/// (None when the settle limit ran out) and the number of retries.
pub(super) async fn send(
    api: std::net::SocketAddr,
    bearer: &str,
    event: Uuid,
    command: &Command,
    attempt: Option<&str>,
    deadline: Instant,
) -> (Option<u16>, String, u64) {
    let spec = spec(command.board);
    let field = spec.operator.value_field();
    // One integer on a board of one column, an array in the columns' order on one with
    // columns.
    let value = if spec.columns().several() {
        serde_json::json!(spec.raw(command.value))
    } else {
        serde_json::json!(command.value.0)
    };
    let attempt = attempt
        .map(|a| format!(r#","attempt_id":"{a}""#))
        .unwrap_or_default();
    let body = format!(
        r#"{{"event_id":"{event}","user_id":"{}","{field}":{value}{attempt}}}"#,
        command.user
    );
    let path = format!("/v1/boards/{}/scores", command.board);
    let mut retries = 0;
    loop {
        let headers = [("authorization", bearer)];
        match http::request(api, "POST", &path, &headers, body.clone(), REQUEST_LIMIT).await {
            Ok((status, body)) if status < 500 => return (Some(status), body, retries),
            _ if Instant::now() > deadline + SETTLE_LIMIT => return (None, String::new(), retries),
            _ => {
                retries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
