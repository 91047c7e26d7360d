//! The drain after the faults: the outbox emptied but for the rows the projection refuses at
//! members chaos corrupted.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::stack::Stack;

const PENDING_MEMBERS: &str = include_str!("../sql/pending_members.sql");

/// What the drain left: members with rows still pending (those at members chaos corrupted are
/// held back on purpose, see [`wait_drained`]) and the parked rows.
#[derive(Debug, Default)]
pub(super) struct Drained {
    /// Pending at members chaos corrupted: the projection script refuses them (LBCORRUPT, fail
    /// closed) and they wait, in back-off, for the reconciler's repair.
    pub(super) held_at_corrupted: usize,
    /// Pending anywhere else: a contract violation.
    pub(super) elsewhere: Vec<(String, String)>,
    pub(super) parked: i64,
}

/// Waits (up to `limit`) until no outbox row is pending but at members chaos corrupted.
pub(super) async fn wait_drained(
    stack: &Stack,
    corrupted: &BTreeSet<(String, String)>,
    limit: Duration,
) -> anyhow::Result<Drained> {
    let started = Instant::now();
    loop {
        let client = stack.db.client().await?;
        let rows = client.query(PENDING_MEMBERS, &[]).await?;
        let mut drained = Drained::default();
        for row in rows {
            match row.get::<_, Option<i64>>(2) {
                Some(parked) => drained.parked = parked,
                None => {
                    let member: (String, String) = (row.get(0), row.get(1));
                    if corrupted.contains(&member) {
                        drained.held_at_corrupted += 1;
                    } else {
                        drained.elsewhere.push(member);
                    }
                }
            }
        }
        if drained.elsewhere.is_empty() || started.elapsed() > limit {
            return Ok(drained);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
