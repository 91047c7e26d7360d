//! Issue 39's first figure: entries into a tournament (one statement each, deciding the cap
//! under the competition's row lock) against the `add` board's commands of the same run, at
//! the same client counts. Every entry is a new player (a counter shared by every connection),
//! so each one takes a seat, as 100,000 players entering would.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::api::Stack;
use crate::load;

/// The next entrant's number.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Entries per second at each client count.
#[derive(Debug, Serialize)]
pub struct EntryFigures {
    pub clients: usize,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Each round's rate on its own.
    pub rounds_per_s: Vec<f64>,
}

fn entry(_: usize, _: u64) -> Vec<u8> {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    load::request(
        "POST",
        "/v1/competitions/kind-cup/entries",
        Some(ledgerboard_testkit::TEST_TOKEN),
        Some(&format!(r#"{{"user_id":"entrant-{n}"}}"#)),
    )
}

/// Entries at each of `clients_levels`, `rounds` rounds of `seconds` each, on fresh stacks.
pub async fn entries(
    clients_levels: &[usize],
    seconds: f64,
    rounds: usize,
) -> anyhow::Result<Vec<EntryFigures>> {
    let mut out = Vec::new();
    for &clients in clients_levels {
        let mut runs = Vec::new();
        for _ in 0..rounds {
            eprintln!("entries into a tournament, {clients} clients");
            let stack = Stack::start(clients + 4).await?;
            stack.declare("kind-cup", r#"{"operator":"best"}"#).await?;
            let mut conn = load::Connection::open(stack.addr).await?;
            let body = r#"{"starts_at":"2000-01-01T00:00:00Z","ends_at":"2100-01-01T00:00:00Z","max_size":100000000}"#;
            let answer = conn
                .send(&load::request(
                    "PUT",
                    "/v1/competitions/kind-cup",
                    Some(ledgerboard_testkit::TEST_TOKEN),
                    Some(body),
                ))
                .await?;
            anyhow::ensure!(
                answer.status == 201,
                "declaring the tournament: {}: {}",
                answer.status,
                String::from_utf8_lossy(&answer.body)
            );
            runs.push(
                load::closed_loop(
                    stack.addr,
                    clients,
                    Duration::from_secs_f64(seconds),
                    201,
                    entry,
                )
                .await?,
            );
            stack.stop().await?;
        }
        let requests: u64 = runs.iter().map(|r| r.requests).sum();
        let secs: f64 = runs.iter().map(|r| r.seconds).sum();
        let mut latencies: Vec<f64> = runs.iter().flat_map(|r| r.latencies_ms.clone()).collect();
        latencies.sort_by(f64::total_cmp);
        out.push(EntryFigures {
            clients,
            per_s: requests as f64 / secs,
            p50_ms: load::percentile(&latencies, 0.5),
            p99_ms: load::percentile(&latencies, 0.99),
            rounds_per_s: runs.iter().map(load::Closed::per_s).collect(),
        });
    }
    Ok(out)
}
