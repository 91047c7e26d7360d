//! The Lua scripts in `lua/` (next to this file), embedded at build time (nothing is read from
//! disk at run time), and the one way to send a pipeline of them.

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Pipeline, RedisResult, Script};

/// `lua/project.lua`: applies one outbox row (absolute score + version) to a board.
pub static PROJECT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/project.lua")));
/// `lua/repair.lua`: sets a member to its source score and version, never over a newer one.
pub static REPAIR: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/repair.lua")));
/// `lua/remove_orphan.lua`: removes a member with no source row, unless it changed.
pub static REMOVE_ORPHAN: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/remove_orphan.lua")));
/// `lua/lock_renew.lua` and `lua/lock_release.lua`: compare-and-renew / compare-and-release.
pub static LOCK_RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/lock_renew.lua")));
pub static LOCK_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/lock_release.lua")));
/// `lua/switch_generation.lua`: makes a rebuilt board live atomically.
pub static SWITCH_GENERATION: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/switch_generation.lua")));

/// `lua/rebuild_chunk.lua`: writes a chunk of source rows into a board's rebuilt generation.
pub static REBUILD_CHUNK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/rebuild_chunk.lua")));

/// Adds one EVALSHA call of `script` to `pipe`; chain `.arg(..)` for its arguments.
pub fn evalsha<'a>(pipe: &'a mut Pipeline, script: &Script, keys: &[&str]) -> &'a mut Pipeline {
    let cmd = pipe.cmd("EVALSHA").arg(script.get_hash()).arg(keys.len());
    for key in keys {
        cmd.arg(*key);
    }
    cmd
}

/// Sends a pipeline of EVALSHA calls of `script` (built with [`evalsha`], with
/// `ignore_errors` set) and returns one reply per call. After a Redis restart or failover the
/// script cache is empty (NOSCRIPT): the script is loaded and the whole pipeline sent once
/// more, which the callers' scripts make harmless. A second NOSCRIPT is returned as it is.
pub async fn send_pipeline<C: ConnectionLike>(
    conn: &mut C,
    script: &Script,
    pipe: &Pipeline,
) -> RedisResult<Vec<RedisResult<String>>> {
    let replies: Vec<RedisResult<String>> = pipe.query_async(conn).await?;
    if !replies
        .iter()
        .any(|r| matches!(r, Err(e) if e.code() == Some("NOSCRIPT")))
    {
        return Ok(replies);
    }
    tracing::info!("a script is missing from Redis (restart or failover?): loading it");
    script.prepare_invoke().load_async(conn).await?;
    pipe.query_async(conn).await
}
