//! The moderation loop of the chaos run: one action at a time during the load, and the last
//! few after the faults. The order it keeps, and why the check can rely on it, is in
//! `moderation`'s comment.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ledgerboard_harness::http;
use serde_json::Value;

use super::api::{REQUEST_LIMIT, SETTLE_LIMIT};
use super::ledger::{Ledger, lock};
use super::moderation::{Act, Moderated};
use super::rng::Rng;

/// The moderation loop: one action at a time until the deadline (see the module's comment for
/// why one at a time). Its choices come from `rng` (the run's seed); which users they hit
/// depends on the commands accepted by then.
pub(super) async fn moderator(
    api: SocketAddr,
    bearer: String,
    ledger: Arc<Mutex<Ledger>>,
    mut rng: Rng,
    started: Instant,
    deadline: Instant,
) {
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(80 + rng.below(120))).await;
        let roll = rng.below(100);
        let earlier = {
            let l = lock(&ledger);
            let applied = &l.moderation.applied;
            (roll < 25 && !applied.is_empty())
                .then(|| applied[rng.below(applied.len() as u64) as usize].clone())
        };
        match earlier {
            // A repeat: the same id and payload must answer 200 with the first outcome.
            // A repeat: the same id and payload must answer 200 with the first outcome.
            Some(first) if roll < 15 => repeat(api, &bearer, &ledger, &first, deadline).await,
            // A reuse of the id for another command (another reason): refused, nothing done.
            Some(first) => reuse(api, &bearer, &ledger, &first, deadline).await,
            None => {
                let pick = rng.below(100);
                let target = {
                    let l = lock(&ledger);
                    if l.order.is_empty() {
                        None
                    } else {
                        let (event, _) = l.order[rng.below(l.order.len() as u64) as usize];
                        let banned: Vec<&String> = l.moderation.banned.iter().collect();
                        let unban = (!banned.is_empty() && rng.below(5) != 0)
                            .then(|| banned[rng.below(banned.len() as u64) as usize].clone());
                        // Half the removals race a command in flight, when there is one
                        // (whichever member the map yields first: not from the seed).
                        let racing = (rng.below(2) == 0)
                            .then(|| l.in_flight.keys().next().cloned())
                            .flatten();
                        l.accepted
                            .get(&event)
                            .map(|c| (c.board, c.user.clone(), unban, racing))
                    }
                };
                let Some((board, user, unban, racing)) = target else {
                    continue;
                };
                let act = match pick {
                    0..35 => Act::Ban(user),
                    // Mostly a banned user, so that most unbans change something.
                    35..60 => Act::Unban(unban.unwrap_or(user)),
                    _ => match racing.clone() {
                        Some((board, user)) => Act::Remove(board, user),
                        None => Act::Remove(board, user),
                    },
                };
                let raced = matches!(act, Act::Remove(..)) && racing.is_some();
                apply(
                    api, &bearer, &ledger, &mut rng, started, deadline, act, raced,
                )
                .await;
            }
        }
    }
}

/// Sends an applied action again, same id and payload: it must answer 200 with
/// `duplicate: true`, the first answer's `result` and its `at`.
async fn repeat(
    api: SocketAddr,
    bearer: &str,
    ledger: &Arc<Mutex<Ledger>>,
    first: &Moderated,
    deadline: Instant,
) {
    let body = first.act.body(first.id, &first.reason);
    let (status, answer, retries) = post(api, bearer, &body, deadline).await;
    let mut l = lock(ledger);
    l.moderation.sent += 1 + retries;
    l.moderation.retries += retries;
    let v: Value = serde_json::from_str(&answer).unwrap_or_default();
    if status == Some(200)
        && v["duplicate"] == true
        && v["result"] == first.result
        && v["at"].as_str() == Some(first.at.as_str())
    {
        l.moderation.duplicates_confirmed += 1;
    } else if status.is_some() {
        l.violations.push(format!(
            "repeat of moderation action {} answered {status:?}: {answer} (first: {})",
            first.id,
            first.to_json()
        ));
    }
}

/// Sends an applied action's id with another reason: it must be refused, 409
/// `action_id_reused` (and change nothing, which the check sees).
async fn reuse(
    api: SocketAddr,
    bearer: &str,
    ledger: &Arc<Mutex<Ledger>>,
    first: &Moderated,
    deadline: Instant,
) {
    let body = first
        .act
        .body(first.id, &format!("{} (another)", first.reason));
    let (status, answer, retries) = post(api, bearer, &body, deadline).await;
    let mut l = lock(ledger);
    l.moderation.sent += 1 + retries;
    l.moderation.retries += retries;
    if status == Some(409) && answer.contains("action_id_reused") {
        l.moderation.conflicts_refused += 1;
    } else if status.is_some() {
        l.violations.push(format!(
            "reuse of moderation action {} answered {status:?}: {answer}",
            first.id
        ));
    }
}

/// Sends a new action and records it in the ledger when the api applied it (201, or 200
/// `duplicate: true` after a retry: an earlier attempt committed); any other answer is a
/// violation. True when it was applied.
#[allow(clippy::too_many_arguments)]
async fn apply(
    api: SocketAddr,
    bearer: &str,
    ledger: &Arc<Mutex<Ledger>>,
    rng: &mut Rng,
    started: Instant,
    deadline: Instant,
    act: Act,
    raced: bool,
) -> bool {
    let id = rng.uuid();
    let reason = format!("chaos {} {}", act.name(), rng.below(1_000_000));
    let body = act.body(id, &reason);
    let (status, answer, retries) = post(api, bearer, &body, deadline).await;
    let mut l = lock(ledger);
    l.moderation.sent += 1 + retries;
    l.moderation.retries += retries;
    let v: Value = serde_json::from_str(&answer).unwrap_or_default();
    match status {
        Some(201) | Some(200)
            if (status == Some(201) || retries > 0 && v["duplicate"] == true)
                && v["action"].as_str() == Some(act.name()) =>
        {
            match &act {
                Act::Ban(u) => {
                    l.moderation.banned.insert(u.clone());
                }
                Act::Unban(u) => {
                    l.moderation.banned.remove(u);
                }
                Act::Remove(..) => {
                    l.moderation.racing_removals += u64::from(raced);
                }
            }
            l.moderation.applied.push(Moderated {
                id,
                act,
                reason,
                status: status.unwrap_or_default(),
                at: v["at"].as_str().unwrap_or_default().to_owned(),
                answered: started.elapsed(),
                result: v["result"].clone(),
            });
            true
        }
        None => {
            // Applied or not, nobody knows: the check cannot be exact.
            l.moderation.unresolved += 1;
            l.violations
                .push(format!("moderation action {id} ({body}) left unresolved"));
            false
        }
        Some(s) => {
            l.violations.push(format!(
                "moderation action {id} ({body}) answered {s}: {answer}"
            ));
            false
        }
    }
}

/// After the faults and the comparison before repair, with every board whole: a ban of a
/// user with visible entries, a removal of another's visible entry and an unban of a banned
/// user (when there is one), none at a member chaos corrupted (its rows wait for the repair),
/// then a repeat and a reuse of the last of them.
/// No rebuild follows them, so what the projection then holds is the projector's own handling
/// of each action: during the load a later rebuild from PostgreSQL can mend a projector that
/// mishandles one (a `hide` projected as a placement), and a run can pass with it.
/// Returns how many were applied.
pub(super) async fn after_the_faults(
    api: SocketAddr,
    bearer: &str,
    ledger: &Arc<Mutex<Ledger>>,
    rng: &mut Rng,
    started: Instant,
    visible: &BTreeMap<&'static str, Vec<String>>,
    corrupted: &BTreeSet<(String, String)>,
) -> usize {
    let banned: Vec<String> = lock(ledger).moderation.banned.iter().cloned().collect();
    // A ban or unban writes the user's entries on every board and period; none may be at a
    // member chaos corrupted.
    let clean = |user: &String| !corrupted.iter().any(|(_, u)| u == user);
    // Users with a visible entry, on no board or period corrupted.
    let mut candidates: Vec<(&'static str, &String)> = visible
        .iter()
        .flat_map(|(board, users)| users.iter().map(move |u| (*board, u)))
        .filter(|(_, user)| clean(user) && !banned.contains(user))
        .collect();
    candidates.sort();
    let mut acts = Vec::new();
    if !candidates.is_empty() {
        let (_, user) = candidates[rng.below(candidates.len() as u64) as usize];
        acts.push(Act::Ban(user.clone()));
        let others: Vec<&(&'static str, &String)> =
            candidates.iter().filter(|(_, u)| *u != user).collect();
        if !others.is_empty() {
            let (board, other) = others[rng.below(others.len() as u64) as usize];
            acts.push(Act::Remove(board, (*other).clone()));
        }
    }
    if let Some(user) = banned.iter().find(|u| clean(u)) {
        acts.push(Act::Unban(user.clone()));
    }
    let mut applied = 0;
    for act in acts {
        // The deadline has passed: `post` gives up after the settle limit.
        if apply(
            api,
            bearer,
            ledger,
            rng,
            started,
            Instant::now(),
            act,
            false,
        )
        .await
        {
            applied += 1;
        }
    }
    // And a repeat and a reuse of the last one, so that every run has at least one of each
    // (during the load they are a share of the loop's requests: none in an unlucky run).
    let last = lock(ledger).moderation.applied.last().cloned();
    if let Some(last) = last {
        repeat(api, bearer, ledger, &last, Instant::now()).await;
        reuse(api, bearer, ledger, &last, Instant::now()).await;
    }
    applied
}

/// Sends a moderation command until an answer says what happened (2xx or 4xx); 5xx answers
/// (a ban's lock wait running out answers 503 and rolls back) and transport errors are retried
/// with the same id. Returns the final answer (None when the settle limit ran out) and the
/// number of retries.
async fn post(
    api: SocketAddr,
    bearer: &str,
    body: &str,
    deadline: Instant,
) -> (Option<u16>, String, u64) {
    let mut retries = 0;
    loop {
        let headers = [("authorization", bearer)];
        match http::request(
            api,
            "POST",
            "/v1/moderation",
            &headers,
            body.to_owned(),
            REQUEST_LIMIT,
        )
        .await
        {
            Ok((status, answer)) if status < 500 => return (Some(status), answer, retries),
            _ if Instant::now() > deadline + SETTLE_LIMIT => return (None, String::new(), retries),
            _ => {
                retries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
