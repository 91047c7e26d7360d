//! Players (issue 38): one more client, posting to the board that takes players' scores
//! (`chaos-b`: write policy `player`, attempts) the way a game client does: a player token
//! its backend minted, an attempt started, the score with it. Between them it sends what an
//! attacker would: the used attempt again under a new event id, a forged token, an expired
//! one, another player's attempt. Each must be refused with its own code; none may change
//! anything: their event ids go to the ledger's refused commands, which the final check holds
//! to having no event on any board (and a command accepted outside the ledger would make its
//! board differ from the expected state).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ledgerboard_core::auth::player::{Claims, SigningKey, now_s};
use ledgerboard_harness::http;
use uuid::Uuid;

use super::api::{REQUEST_LIMIT, SETTLE_LIMIT};
use super::client::{drawn, record_new, send};
use super::ledger::{Command, Ledger, epoch_secs, lock};
use super::rng::Rng;
use super::specs::{USERS, spec};

/// The board players post to.
pub(super) const PLAYERS_BOARD: &str = "chaos-b";
/// The key id of the run's player key (`auth.player_keys`).
pub(super) const KID: &str = "chaos";

/// A player token for `user`, signed with `secret` (HS256), expiring at `exp`, as an
/// Authorization value; empty when it cannot be minted (a bad key: every request then answers
/// `unauthenticated`, which the run reports as a violation).
fn token(secret: &str, user: &str, exp: u64) -> String {
    let claims = Claims {
        sub: user.to_owned(),
        boards: vec![PLAYERS_BOARD.to_owned()],
        exp,
        nbf: None,
        aud: None,
    };
    SigningKey::parse(KID, &format!("HS256:{secret}"))
        .and_then(|k| k.mint(&claims))
        .map(|t| format!("Bearer {t}"))
        .unwrap_or_default()
}

/// Starts an attempt until an answer says what happened (5xx and transport errors retried:
/// the request id makes that harmless); its id, or None.
async fn start(
    api: std::net::SocketAddr,
    bearer: &str,
    rng: &mut Rng,
    deadline: Instant,
) -> Option<String> {
    let body = format!(r#"{{"request_id":"{}"}}"#, rng.uuid());
    let path = format!("/v1/boards/{PLAYERS_BOARD}/attempts");
    loop {
        let headers = [("authorization", bearer)];
        match http::request(api, "POST", &path, &headers, body.clone(), REQUEST_LIMIT).await {
            Ok((status, body)) if status < 500 => {
                let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                return v["attempt_id"].as_str().map(str::to_owned);
            }
            _ if Instant::now() > deadline + SETTLE_LIMIT => return None,
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

fn code(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v["error"]["code"].as_str().unwrap_or_default().to_owned()
}

/// The players' client, until the deadline.
pub(super) async fn players(
    api: std::net::SocketAddr,
    secret: String,
    ledger: Arc<Mutex<Ledger>>,
    mut rng: Rng,
    deadline: Instant,
) {
    // A well-formed key the api does not hold: what a forger signs with.
    let forger = format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
    while Instant::now() < deadline {
        let user = format!("user-{:03}", rng.below(USERS));
        let bearer = token(&secret, &user, now_s() + 600);
        let Some(attempt) = start(api, &bearer, &mut rng, deadline).await else {
            continue;
        };
        lock(&ledger).players.attempts_started += 1;
        let command = |user: &str, rng: &mut Rng| Command {
            board: PLAYERS_BOARD,
            user: user.to_owned(),
            value: drawn(spec(PLAYERS_BOARD), rng),
        };
        let roll = rng.below(100);
        // An attack: who sends it, with which attempt, and the code it must get.
        let attack = match roll {
            0..60 => None,
            60..70 => Some((
                token(&forger, &user, now_s() + 600),
                user.clone(),
                "token_signature",
            )),
            70..80 => Some((
                token(&secret, &user, now_s() - 300),
                user.clone(),
                "token_expired",
            )),
            _ => {
                let other = format!("user-{:03}", (rng.below(USERS) + 1) % USERS);
                let other = if other == user {
                    format!("{user}-x")
                } else {
                    other
                };
                Some((
                    token(&secret, &other, now_s() + 600),
                    other,
                    "attempt_foreign",
                ))
            }
        };
        if let Some((bearer, user, expected)) = attack {
            let (event, cmd) = (rng.uuid(), command(&user, &mut rng));
            let (status, body, _) = send(api, &bearer, event, &cmd, Some(&attempt), deadline).await;
            refused(&ledger, event, cmd, status, &body, expected);
            continue;
        }
        let (event, cmd) = (rng.uuid(), command(&user, &mut rng));
        let sent = epoch_secs();
        let (status, body, retries) =
            send(api, &bearer, event, &cmd, Some(&attempt), deadline).await;
        let answered = epoch_secs();
        {
            let mut l = lock(&ledger);
            l.players.scores_sent += 1;
            l.sent += 1 + retries;
            l.retries += retries;
            record_new(&mut l, event, cmd, status, &body, retries, sent, answered);
        }
        // Half of them: the used attempt again, under a new event id (a replay).
        if status.is_some() && rng.below(2) == 0 {
            let (event, cmd) = (rng.uuid(), command(&user, &mut rng));
            let (status, body, _) = send(api, &bearer, event, &cmd, Some(&attempt), deadline).await;
            refused(&ledger, event, cmd, status, &body, "attempt_used");
        }
    }
}

/// An attack's answer: refused with `expected` (or unanswered: refused all the same, since
/// the check holds it to having no event anywhere).
fn refused(
    ledger: &Mutex<Ledger>,
    event: Uuid,
    command: Command,
    status: Option<u16>,
    body: &str,
    expected: &str,
) {
    let mut l = lock(ledger);
    l.sent += 1;
    if status.is_some() && code(body) != expected {
        l.violations.push(format!(
            "a player's request that must be refused {expected} answered {status:?}: {body}"
        ));
    } else if status.is_some() {
        l.players.attacks_refused += 1;
    }
    l.refused.insert(event, command);
}
