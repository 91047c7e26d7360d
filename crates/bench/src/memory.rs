//! Redis memory per user: the projection of one board (sorted set + version hash + one live
//! event marker per user, as after one command each) against the sorted set alone.
//! Measured with `MEMORY USAGE … SAMPLES 0` (every element counted), for a large board and for
//! a small one (Redis keeps sets of up to 128 members in the compact listpack encoding).

use std::time::Duration;

use ledgerboard_core::db::{Database, outbox};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::apply_batch;
use ledgerboard_testkit::seed_outbox;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct BoardMemory {
    pub users: i64,
    pub sorted_set_bytes: u64,
    pub version_hash_bytes: u64,
    /// One marker per user (one command each within the marker TTL).
    pub markers_bytes: u64,
}

impl BoardMemory {
    pub fn total(&self) -> u64 {
        self.at_rest() + self.markers_bytes
    }

    /// What a user costs once the marker of its last command has expired.
    pub fn at_rest(&self) -> u64 {
        self.sorted_set_bytes + self.version_hash_bytes
    }

    pub fn per_user(&self, bytes: u64) -> f64 {
        bytes as f64 / self.users as f64
    }
}

#[derive(Debug, Serialize)]
pub struct MemoryFigures {
    pub boards: Vec<BoardMemory>,
    /// Length of the user ids measured (bytes): longer ids cost as much again in each key.
    pub user_id_bytes: usize,
}

pub async fn run(quick: bool) -> anyhow::Result<MemoryFigures> {
    let large = if quick { 10_000 } else { 100_000 };
    let (db, _redis, settings) = crate::settings::fresh().await?;
    let client = db.client().await;
    let database = Database::connect(&settings.database, "bench-memory")?;
    let store = Store::connect(&settings.redis)?;
    let mut boards = Vec::new();
    for (board, users) in [("memory-small", 100), ("memory-large", large)] {
        eprintln!("Redis memory of a {users}-user board");
        // One command per user: every user has a score, a version and one live marker.
        seed_outbox(&client, board, users, users).await;
        let c = database.client().await?;
        let entries: Vec<_> = outbox::claim(&c, database.statements(), users as usize)
            .await?
            .into_iter()
            .filter_map(|c| c.entry.ok())
            .collect();
        anyhow::ensure!(entries.len() == users as usize, "not every row was claimed");
        for chunk in entries.chunks(500) {
            apply_batch(&store, chunk, Duration::from_secs(86_400))
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
        }
        let id = BoardId::parse(board)?;
        let keys = store.keys();
        let mut conn = store.connection().await?;
        let usage = |key: String| {
            let mut cmd = redis::cmd("MEMORY");
            cmd.arg("USAGE").arg(key).arg("SAMPLES").arg(0);
            cmd
        };
        let sorted_set_bytes: u64 = usage(keys.scores(&id)).query_async(&mut conn).await?;
        let version_hash_bytes: u64 = usage(keys.versions(&id)).query_async(&mut conn).await?;
        let mut markers_bytes = 0;
        for chunk in entries.chunks(1_000) {
            let mut pipe = redis::pipe();
            for e in chunk {
                pipe.add_command(usage(keys.event_marker(&id, &e.event_id)));
            }
            let sizes: Vec<Option<u64>> = pipe.query_async(&mut conn).await?;
            anyhow::ensure!(
                sizes.iter().all(Option::is_some),
                "an event marker is missing"
            );
            markers_bytes += sizes.into_iter().flatten().sum::<u64>();
        }
        // The claim does not mark rows published: the next board must not claim these again.
        client
            .execute("DELETE FROM leaderboard_outbox", &[])
            .await?;
        boards.push(BoardMemory {
            users,
            sorted_set_bytes,
            version_hash_bytes,
            markers_bytes,
        });
    }
    Ok(MemoryFigures {
        boards,
        // testkit's seeded ids: 'u' and six digits.
        user_id_bytes: 7,
    })
}
