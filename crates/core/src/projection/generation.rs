//! A rebuild's Redis side: a new generation of a board's keys (`:z:rebuild`, `:v:rebuild`,
//! `:d:rebuild`, `:x:rebuild`, sealed by `:m:rebuild` while it is built), written chunk by chunk, then switched live in
//! one atomic step and sealed; and the rebuild requests that readers and projectors leave for
//! the reconciler. When to rebuild, under which lock, and the verifying pass are the
//! reconciler's (`crates/reconciler/src/rebuild.rs`).
//!
//! The build's seal is written before the builder reads its first row from PostgreSQL. From
//! then on the projector writes every row to both generations (`lua/project.lua`), and a chunk
//! writes each source row only where the new generation holds no newer version
//! (`lua/rebuild_chunk.lua`). So every version the live generation shows at the switch is in
//! the new one too.

use redis::RedisResult;

use super::keys::KeyLayout;
use super::member;
use super::scripts::{REBUILD_CHUNK, SEAL_NEW, SWITCH_GENERATION};
use super::{ReadModelError, Store, TimedConnection};
use crate::db::source::SourceRow;
use crate::model::BoardId;
use crate::model::Order;

/// A new generation of one board being built, on one connection held for the whole build.
pub struct Build {
    conn: TimedConnection,
    board: BoardId,
    scores: String,
    versions: String,
    distinct: String,
    metadata: String,
    meta: String,
    /// The board's tombstones (live, shared by every generation).
    tombstones: String,
    ttl_ms: u64,
    generation: String,
}

impl Build {
    /// Deletes the leftovers of a build that died half-way, then writes the build's seal
    /// (`gen`, `built_at`, a TTL of `ttl_ms`, and `dense` when the board is read with dense
    /// ranks: [`wants_distinct`]), in one MULTI/EXEC: from then on the projector writes the new
    /// generation too. If the builder dies, the seal expires and the projector stops writing
    /// the abandoned generation.
    pub async fn begin(
        store: &Store,
        board: &BoardId,
        ttl_ms: u64,
    ) -> Result<Build, ReadModelError> {
        let keys = store.keys();
        let (scores, versions, distinct, metadata, meta) = (
            keys.rebuild_scores(board),
            keys.rebuild_versions(board),
            keys.rebuild_distinct(board),
            keys.rebuild_metadata(board),
            keys.rebuild_meta(board),
        );
        let mut conn = store.connection().await?;
        // Asked before the MULTI: the set is not board-tagged (another Cluster slot). A dense
        // read that marks the board after this look asked for a rebuild too, served next.
        let dense = wants_distinct(&mut conn, keys, board).await?;
        let generation = uuid::Uuid::new_v4().simple().to_string();
        let built_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut seal = redis::cmd("HSET");
        seal.arg(&meta)
            .arg("gen")
            .arg(&generation)
            .arg("built_at")
            .arg(built_at);
        if dense {
            seal.arg("dense").arg(1);
        }
        redis::pipe()
            .atomic()
            .cmd("UNLINK")
            .arg(&scores)
            .arg(&versions)
            .arg(&distinct)
            .arg(&metadata)
            .arg(&meta)
            .ignore()
            .add_command(seal)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&meta)
            .arg(ttl_ms)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(Build {
            conn,
            board: board.clone(),
            scores,
            versions,
            distinct,
            metadata,
            meta,
            tombstones: keys.tombstones(board),
            ttl_ms,
            generation,
        })
    }

    /// The generation's id (the seal's `gen`).
    pub fn generation(&self) -> &str {
        &self.generation
    }

    /// Writes one chunk of source rows where the new generation holds no newer version (each
    /// member spelt with its key, its distinct tuple and metadata with it), and renews the
    /// build's seal; answers the rows written. An error when the build's seal is gone
    /// (`LBNOBUILD`: the build was abandoned).
    ///
    /// The rows go in sections laid out as Redis's bulk commands take them (the script's
    /// header): (score, member) pairs, (user, stored value) pairs, then (user, metadata) for
    /// the rows that have some, so a chunk that meets nothing in the new generation is written
    /// with no work per row in Lua.
    pub async fn write_chunk<'a>(
        &mut self,
        rows: impl IntoIterator<Item = &'a SourceRow>,
    ) -> Result<i64, ReadModelError> {
        let rows: Vec<&SourceRow> = rows.into_iter().collect();
        let mut call = REBUILD_CHUNK.prepare_invoke();
        call.key(&self.scores)
            .key(&self.versions)
            .key(&self.meta)
            .key(&self.distinct)
            .key(&self.metadata)
            .key(&self.tombstones)
            .arg(self.ttl_ms)
            .arg(rows.len());
        for row in &rows {
            call.arg(row.score)
                .arg(member::member(&row.user_id, row.key));
        }
        for row in &rows {
            call.arg(&row.user_id)
                .arg(member::stored(row.version, row.key));
        }
        for row in &rows {
            if let Some(metadata) = &row.metadata {
                call.arg(&row.user_id).arg(metadata);
            }
        }
        Ok(call.invoke_async::<i64>(&mut self.conn).await?)
    }

    /// Makes the new generation live in one atomic step (`lua/switch_generation.lua`): the
    /// live keys become the retired ones, the new ones the live ones; with `seal` (the board's
    /// order), the build's seal becomes the board's, counting the members (`card`), distinct
    /// scores (`dcard`) and members with metadata (`xcard`) the new generation holds, and
    /// stating the order (`order`: read when PostgreSQL cannot state the definition), else the
    /// board is left without a seal (a board with no source rows: reads of a board that does
    /// not exist must leave nothing behind). Then the retired generation is deleted with
    /// UNLINK (off Redis's main thread): that outcome is returned apart, since the new
    /// generation is live already and a failure there leaves garbage, not a wrong board.
    pub async fn switch(
        mut self,
        store: &Store,
        seal: Option<Order>,
    ) -> Result<RedisResult<()>, ReadModelError> {
        let keys = store.keys();
        let board = &self.board;
        let retired = [
            keys.retired_scores(board),
            keys.retired_versions(board),
            keys.retired_distinct(board),
            keys.retired_metadata(board),
        ];
        let _: String = SWITCH_GENERATION
            .key(keys.scores(board))
            .key(&self.scores)
            .key(&retired[0])
            .key(keys.versions(board))
            .key(&self.versions)
            .key(&retired[1])
            .key(keys.distinct(board))
            .key(&self.distinct)
            .key(&retired[2])
            .key(keys.metadata(board))
            .key(&self.metadata)
            .key(&retired[3])
            .key(keys.meta(board))
            .key(&self.meta)
            .arg(if seal.is_some() { "seal" } else { "unseal" })
            .arg(seal.map(Order::encode).unwrap_or_default())
            .invoke_async(&mut self.conn)
            .await?;
        let unlinked: RedisResult<i64> = redis::cmd("UNLINK")
            .arg(&retired[..])
            .query_async(&mut self.conn)
            .await;
        Ok(unlinked.map(|_| ()))
    }
}

/// Seals the empty projection of `board`, which PostgreSQL has just created with no row (a
/// competition's cohort, by its first entry), unless any of its keys exists
/// (`lua/seal_new.lua`): then its first reads find it whole, with no rebuild. Answers whether
/// it sealed.
pub async fn seal_new(
    store: &Store,
    board: &BoardId,
    order: Order,
) -> Result<bool, ReadModelError> {
    let keys = store.keys();
    let mut conn = store.connection().await?;
    let built_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let answer: String = SEAL_NEW
        .key(keys.scores(board))
        .key(keys.versions(board))
        .key(keys.distinct(board))
        .key(keys.metadata(board))
        .key(keys.tombstones(board))
        .key(keys.rebuild_meta(board))
        .key(keys.meta(board))
        .arg(uuid::Uuid::new_v4().simple().to_string())
        .arg(built_at)
        .arg(order.encode())
        .invoke_async(&mut conn)
        .await?;
    Ok(answer == "sealed")
}

/// Up to `count` boards from the rebuild requests, at random (`SRANDMEMBER`): as stored,
/// since only valid board ids are ever requested but anything may be written by hand.
pub async fn requested(
    store: &Store,
    kind: RequestKind,
    count: usize,
) -> Result<Vec<String>, ReadModelError> {
    let mut conn = store.connection().await?;
    Ok(redis::cmd("SRANDMEMBER")
        .arg(kind.key(store.keys()))
        .arg(count)
        .query_async(&mut conn)
        .await?)
}

/// Takes one name off the rebuild requests before its board is looked at: an ask that comes
/// while the board is checked or rebuilt adds it again, so it is never lost by the removal
/// after the work. False when the name was not there (another replica took it).
pub async fn claim_request(
    store: &Store,
    kind: RequestKind,
    name: &str,
) -> Result<bool, ReadModelError> {
    let mut conn = store.connection().await?;
    let removed: i64 = redis::cmd("SREM")
        .arg(kind.key(store.keys()))
        .arg(name)
        .query_async(&mut conn)
        .await?;
    Ok(removed == 1)
}

/// Which requests the reconciler serves between passes: rebuilds that readers and projectors
/// send for a board found not whole (served only while the board is still not whole), an
/// operator's rebuild, served whatever the seal says, and an operator's check: a pass over
/// that one board, which repairs what it finds and records its report like any pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    NotWhole,
    Forced,
    Check,
}

impl RequestKind {
    fn key(self, keys: &KeyLayout) -> String {
        match self {
            RequestKind::NotWhole => keys.rebuild_requests(),
            RequestKind::Forced => keys.forced_rebuild_requests(),
            RequestKind::Check => keys.check_requests(),
        }
    }
}

/// Adds `board` to the requests of `kind` (the console's rebuild and check; readers and
/// projectors send theirs through `apply::request_rebuild`, the same set as `NotWhole`).
pub async fn request(
    store: &Store,
    kind: RequestKind,
    board: &BoardId,
) -> Result<(), ReadModelError> {
    let mut conn = store.connection().await?;
    let _: i64 = redis::cmd("SADD")
        .arg(kind.key(store.keys()))
        .arg(board.as_str())
        .query_async(&mut conn)
        .await?;
    Ok(())
}

/// Marks `board` as read with dense ranks (its base board, so all its periods and cohorts):
/// from its next rebuild on, its projection keeps the distinct scores. A dense read that finds
/// a seal without `dcard` calls this before it falls back to PostgreSQL and asks for that
/// rebuild; only a board with a seal is marked, so reads of made-up boards add nothing.
pub async fn want_distinct(store: &Store, board: &BoardId) -> Result<(), ReadModelError> {
    let mut conn = store.connection().await?;
    let _: i64 = redis::cmd("SADD")
        .arg(store.keys().dense_boards())
        .arg(board.base().as_str())
        .query_async(&mut conn)
        .await?;
    Ok(())
}

/// Whether `board` (its base board) was marked by [`want_distinct`].
pub async fn wants_distinct<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    keys: &KeyLayout,
    board: &BoardId,
) -> Result<bool, ReadModelError> {
    let member: i64 = redis::cmd("SISMEMBER")
        .arg(keys.dense_boards())
        .arg(board.base().as_str())
        .query_async(conn)
        .await?;
    Ok(member == 1)
}

/// Whether `board` is marked dense ([`want_distinct`]) while its seal keeps no distinct scores
/// (no `dcard`): its dense reads fall back, so the rebuild they asked for is needed however
/// whole its members are.
pub async fn distinct_missing(store: &Store, board: &BoardId) -> Result<bool, ReadModelError> {
    let mut conn = store.connection().await?;
    let dcard: Option<String> = redis::cmd("HGET")
        .arg(store.keys().meta(board))
        .arg("dcard")
        .query_async(&mut conn)
        .await?;
    Ok(dcard.is_none() && wants_distinct(&mut conn, store.keys(), board).await?)
}
