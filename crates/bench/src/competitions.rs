//! Issue 39's first figure: entries into a tournament (one statement each, deciding the cap
//! under the competition's row lock) against the `add` board's commands of the same run, at
//! the same client counts. Every entry is a new player (a counter shared by every connection),
//! so each one takes a seat, as 100,000 players entering would.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::api::Stack;
use crate::load;

/// The next entrant's number.
static NEXT: AtomicU64 = AtomicU64::new(0);

fn entry(_: usize, _: u64) -> Vec<u8> {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    load::request(
        "POST",
        "/v1/competitions/kind-cup/entries",
        Some(ledgerboard_testkit::TEST_TOKEN),
        Some(&format!(r#"{{"user_id":"entrant-{n}"}}"#)),
    )
}

/// Entries at each of `clients_levels`, `rounds` rounds of `seconds` each, on fresh stacks:
/// each level's runs (the board kinds' `throughput` sums them up).
pub async fn entries(
    clients_levels: &[usize],
    seconds: f64,
    rounds: usize,
) -> anyhow::Result<Vec<(usize, Vec<load::Closed>)>> {
    let mut out = Vec::new();
    for &clients in clients_levels {
        let mut runs = Vec::new();
        for _ in 0..rounds {
            eprintln!("entries into a tournament, {clients} clients");
            let stack = Stack::start(clients + 4).await?;
            stack.declare("kind-cup", r#"{"operator":"best"}"#).await?;
            let window = r#"{"starts_at":"2000-01-01T00:00:00Z","ends_at":"2100-01-01T00:00:00Z","max_size":100000000}"#;
            stack.put("/v1/competitions/kind-cup", window).await?;
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
        out.push((clients, runs));
    }
    Ok(out)
}
