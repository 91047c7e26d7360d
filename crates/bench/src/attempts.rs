//! Issue 38's second figure: what an attempt costs a player's command.

use crate::load;

/// Issue 38's second figure: an attempt round trip (start an attempt, then post the score
/// with it) against a plain command, both with player tokens, at 16 connections, on boards
/// that differ only in requiring attempts. Target: the round trip's latency under 2× the
/// plain command's.
#[derive(Debug, serde::Serialize)]
pub struct AttemptFigures {
    pub clients: usize,
    pub seconds: f64,
    pub rounds: usize,
    /// Plain commands: per second, and their latency p50 / p99, every round together.
    pub plain_per_s: f64,
    pub plain_p50_ms: f64,
    pub plain_p99_ms: f64,
    /// Round trips (two requests each).
    pub round_trip_per_s: f64,
    pub round_trip_p50_ms: f64,
    pub round_trip_p99_ms: f64,
}

/// The board both sides post to, and the attempts board's definition.
const PLAIN: (&str, &str) = (
    "kind-plain",
    r#"{"operator":"add","write_policy":"player"}"#,
);
const ATTEMPTS: (&str, &str) = (
    "kind-attempts",
    r#"{"operator":"add","write_policy":"player","attempts":{"ttl_s":600}}"#,
);

/// Runs both sides on fresh stacks, `rounds` times each, alternating.
pub async fn attempt_round_trip(quick: bool) -> anyhow::Result<AttemptFigures> {
    let (clients, seconds, rounds) = if quick { (16, 0.5, 1) } else { (16, 4.0, 2) };
    let (mut plain, mut trips) = (Vec::new(), Vec::new());
    let (mut plain_n, mut trips_n) = (0u64, 0u64);
    for _ in 0..rounds {
        for with_attempts in [false, true] {
            let (board, definition) = if with_attempts { ATTEMPTS } else { PLAIN };
            eprintln!("player commands on {board}, {clients} clients");
            let stack = crate::api::Stack::start(clients + 4).await?;
            stack.declare_all(&[(board, definition)]).await?;
            let (n, mut latencies) =
                player_loop(stack.addr, board, clients, seconds, with_attempts).await?;
            stack.stop().await?;
            if with_attempts {
                trips_n += n;
                trips.append(&mut latencies);
            } else {
                plain_n += n;
                plain.append(&mut latencies);
            }
        }
    }
    plain.sort_by(f64::total_cmp);
    trips.sort_by(f64::total_cmp);
    let total = seconds * rounds as f64;
    Ok(AttemptFigures {
        clients,
        seconds,
        rounds,
        plain_per_s: plain_n as f64 / total,
        plain_p50_ms: load::percentile(&plain, 0.5),
        plain_p99_ms: load::percentile(&plain, 0.99),
        round_trip_per_s: trips_n as f64 / total,
        round_trip_p50_ms: load::percentile(&trips, 0.5),
        round_trip_p99_ms: load::percentile(&trips, 0.99),
    })
}

/// `clients` connections, each its own player, for `seconds`: a plain command at a time, or a
/// round trip at a time; every answer must be 201. The count and the latencies (ms).
async fn player_loop(
    addr: std::net::SocketAddr,
    board: &'static str,
    clients: usize,
    seconds: f64,
    with_attempts: bool,
) -> anyhow::Result<(u64, Vec<f64>)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            tokio::spawn(async move {
                let (user, token) = crate::players::player(client);
                let mut conn = load::Connection::open(addr).await?;
                let mut latencies = Vec::new();
                while std::time::Instant::now() < deadline {
                    let started = std::time::Instant::now();
                    let attempt = if with_attempts {
                        let body = format!(r#"{{"request_id":"{}"}}"#, uuid::Uuid::new_v4());
                        let path = format!("/v1/boards/{board}/attempts");
                        let req = load::request("POST", &path, Some(&token), Some(&body));
                        let answer = conn.send(&req).await?;
                        anyhow::ensure!(
                            answer.status == 201,
                            "an attempt's start answered {}: {}",
                            answer.status,
                            String::from_utf8_lossy(&answer.body)
                        );
                        let v: serde_json::Value = serde_json::from_slice(&answer.body)?;
                        let id = v["attempt_id"].as_str().unwrap_or_default().to_owned();
                        format!(r#","attempt_id":"{id}""#)
                    } else {
                        String::new()
                    };
                    let event = uuid::Uuid::new_v4();
                    let body = format!(
                        r#"{{"event_id":"{event}","user_id":"{}","delta":1{attempt}}}"#,
                        user
                    );
                    let path = format!("/v1/boards/{board}/scores");
                    let answer = conn
                        .send(&load::request("POST", &path, Some(&token), Some(&body)))
                        .await?;
                    anyhow::ensure!(
                        answer.status == 201,
                        "a player's command answered {}: {}",
                        answer.status,
                        String::from_utf8_lossy(&answer.body)
                    );
                    latencies.push(started.elapsed().as_secs_f64() * 1e3);
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok((all.len() as u64, all))
}
