//! A rebuild's read of PostgreSQL (`db::source::scan_in_order`): every visible row of the
//! board exactly once, in the board's order, from one snapshot, while commands move scores
//! across the part already read.

use std::collections::BTreeMap;

use ledgerboard_core::db::StoreError;
use ledgerboard_core::db::source::{self, Chunks, SourceRow};
use ledgerboard_core::model::BoardId;

use crate::common::env;

const USERS: i64 = 2_000;
const CHUNK: usize = 150;

/// Keeps every chunk; runs `during_first` (statements of another session) while it takes the
/// first one, and fails at chunk `fail_at` when set.
struct Keep<'a> {
    client: &'a tokio_postgres::Client,
    during_first: &'a str,
    fail_at: Option<usize>,
    chunks: usize,
    rows: Vec<SourceRow>,
}

impl Chunks for Keep<'_> {
    type Error = StoreError;

    async fn take(&mut self, rows: &[SourceRow]) -> Result<(), StoreError> {
        self.chunks += 1;
        if self.chunks == 1 && !self.during_first.is_empty() {
            self.client
                .batch_execute(self.during_first)
                .await
                .map_err(|e| StoreError::Internal(format!("{e:?}")))?;
        }
        if self.fail_at == Some(self.chunks) {
            return Err(StoreError::Unavailable("the chunk's write failed".into()));
        }
        self.rows.extend_from_slice(rows);
        Ok(())
    }
}

fn keep<'a>(client: &'a tokio_postgres::Client, during_first: &'a str) -> Keep<'a> {
    Keep {
        client,
        during_first,
        fail_at: None,
        chunks: 0,
        rows: Vec::new(),
    }
}

/// While the first chunk is being written, the board's worst ten rows move to the top (into
/// the part already read), ten of the best move to the bottom (into the part still to read),
/// a user joins near the bottom and one in the middle leaves (hidden). The scan still reads
/// each row of the board as it stood when the scan began, once, in order. Pages that are each
/// a statement of their own (keyset or OFFSET pages in score order) never read the ten moved
/// up and read the ten moved down twice: this test fails with OFFSET pages (run once).
#[tokio::test]
async fn a_scan_reads_every_row_once_in_order_from_one_snapshot_while_scores_move() {
    let env = env().await;
    let board = BoardId::parse("scan").expect("board");
    env.client
        .batch_execute(&format!(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 'scan', 'p' || lpad(g::text, 5, '0'), g * 10, 1 FROM generate_series(1, {USERS}) g;
             INSERT INTO user_scores (board_id, user_id, score, version, hidden)
             VALUES ('scan', 'hidden-one', 5, 1, true);
             INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 'other', 'p' || g, g, 1 FROM generate_series(1, 100) g;"
        ))
        .await
        .expect("seed");

    let mut sink = keep(
        &env.client,
        "UPDATE user_scores SET score = score + 1000000, version = version + 1
          WHERE board_id = 'scan' AND score <= 100;
         UPDATE user_scores SET score = -score, version = version + 1
          WHERE board_id = 'scan' AND score > 19900 AND score < 1000000;
         INSERT INTO user_scores (board_id, user_id, score, version)
         VALUES ('scan', 'late', 15, 1);
         UPDATE user_scores SET hidden = true, version = version + 1
          WHERE board_id = 'scan' AND user_id = 'p01000';",
    );
    let total = source::scan_in_order(&env.db, &board, CHUNK, &mut sink)
        .await
        .expect("scan");
    let (read, chunks) = (sink.rows, sink.chunks);

    assert_eq!(total, USERS as u64, "rows answered");
    assert_eq!(read.len(), USERS as usize, "rows handed over");
    assert!(chunks >= USERS as usize / CHUNK, "{chunks} chunks");
    let by_user: BTreeMap<&str, (i64, i64)> = read
        .iter()
        .map(|r| (r.user_id.as_str(), (r.score, r.version)))
        .collect();
    assert_eq!(by_user.len(), USERS as usize, "each user once");
    for g in 1..=USERS {
        let user = format!("p{g:05}");
        assert_eq!(by_user.get(user.as_str()), Some(&(g * 10, 1)), "{user}");
    }
    let scores: Vec<i64> = read.iter().map(|r| r.score).collect();
    assert!(
        scores.windows(2).all(|w| w[0] > w[1]),
        "best first, in the board's order"
    );
}

/// An error from the caller's work on a chunk stops the scan and comes back as it is; the pool
/// serves the next caller (the scan's connection, its state unknown, left it).
#[tokio::test]
async fn an_error_from_a_chunk_stops_the_scan_and_is_answered() {
    let env = env().await;
    let board = BoardId::parse("scan").expect("board");
    env.client
        .batch_execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 'scan', 'p' || g, g, 1 FROM generate_series(1, 500) g",
        )
        .await
        .expect("seed");
    let mut sink = keep(&env.client, "");
    sink.fail_at = Some(2);
    let outcome = source::scan_in_order(&env.db, &board, 100, &mut sink).await;
    let chunks = sink.chunks;
    assert!(
        matches!(&outcome, Err(StoreError::Unavailable(m)) if m == "the chunk's write failed"),
        "{outcome:?}"
    );
    assert_eq!(chunks, 2, "no chunk after the error");
    let again = source::scan_in_order(&env.db, &board, 100, &mut keep(&env.client, ""))
        .await
        .expect("a scan after the failed one");
    assert_eq!(again, 500);
}
