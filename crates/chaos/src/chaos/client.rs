//! The load: one client sends new commands, duplicates and conflicting reuses through the api
//! until the deadline, and records every answer in the ledger.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ledgerboard_core::board::Value;
use ledgerboard_harness::http;
use uuid::Uuid;

use super::api::{REQUEST_LIMIT, SETTLE_LIMIT};
use super::ledger::{Command, InFlight, Landed, Ledger, Outcome, epoch_secs, lock, outcome};
use super::rng::Rng;
use super::specs::{BOARDS, SCORES, USERS, spec};

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
            // A conflicting reuse: the same event id with another value must be refused.
            Some((event, mut command, _)) => {
                // Deltas are within ±100: one more is another valid delta (never 0); scores
                // are below SCORES: one more is within the declared bounds.
                command.value = if spec(command.board).operator.value() == Value::Delta
                    && command.value == -1
                {
                    1
                } else {
                    command.value + 1
                };
                (event, command, Sending::Reuse)
            }
            None => {
                let event = rng.uuid();
                let board = BOARDS[rng.below(BOARDS.len() as u64) as usize];
                let user = format!("user-{:03}", rng.below(USERS));
                let value = if spec(board).operator.value() == Value::Delta {
                    let magnitude = 1 + rng.below(100) as i64;
                    if rng.below(2) == 0 {
                        magnitude
                    } else {
                        -magnitude
                    }
                } else {
                    rng.below(SCORES) as i64
                };
                (event, Command { board, user, value }, Sending::New)
            }
        };
        let _in_flight = InFlight::begin(&ledger, command.board, &command.user);
        let sent = epoch_secs();
        let (status, body, retries) = send(api, &bearer, event, &command, deadline).await;
        let answered = epoch_secs();
        let mut l = lock(&ledger);
        l.sent += 1 + retries;
        l.retries += retries;
        match kind {
            Sending::Duplicate(first) => {
                // Period included: a repeat names the first run's period, even after a reset.
                let same_outcome = first.is_none_or(|f| outcome(&body) == Some(f));
                if status == Some(200) && body.contains(r#""duplicate":true"#) && same_outcome {
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
            Sending::New => match status {
                // 200: an earlier attempt committed but its answer was lost; the duplicate's
                // answer is the first run's, period included.
                Some(201) | Some(200)
                    if status == Some(201)
                        || retries > 0 && body.contains(r#""duplicate":true"#) =>
                {
                    let stated = outcome(&body);
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
            },
        }
    }
}

/// What a client sends: a new command, a duplicate of an accepted one (with what its first
/// answer stated), or a reuse of an accepted one's id with another value.
enum Sending {
    New,
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
    deadline: Instant,
) -> (Option<u16>, String, u64) {
    let field = spec(command.board).operator.value_field();
    let body = format!(
        r#"{{"event_id":"{event}","user_id":"{}","{field}":{}}}"#,
        command.user, command.value
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
