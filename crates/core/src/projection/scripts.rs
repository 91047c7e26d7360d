//! The Lua scripts in the repository's top-level `lua/`, embedded at build time (nothing is read
//! from disk at run time), and the one way to send a pipeline of them.
//!
//! The scripts that check their keys' types share `lua/prelude.lua` (its `#!lua` line and
//! `wrong_type`) and `lua/members.lua` (how members are spelt); read-only scripts share the
//! latter behind a `#!lua flags=no-writes` line. Redis has no include, so the prelude is put in front of each of them here,
//! at compile time: each is still sent as one body, loaded and called by one SHA1.

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, Pipeline, RedisResult, Script};

/// `lua/prelude.lua`, `lua/members.lua` (the spelling of members and the distinct-scores
/// helper), `lua/place.lua` (writing one member with its distinct score and metadata), then
/// the script `lua/<name>.lua`, as one text.
macro_rules! with_prelude {
    ($name:literal) => {
        concat!(
            include_str!("../../../../lua/prelude.lua"),
            include_str!("../../../../lua/members.lua"),
            include_str!("../../../../lua/place.lua"),
            include_str!(concat!("../../../../lua/", $name, ".lua"))
        )
    };
}

/// A read-only script: the `no-writes` flag (Redis then runs it on a replica, and never under
/// OOM refusal), `lua/members.lua`, then `lua/<name>.lua`, which has no `#!lua` line of its own.
macro_rules! read_only {
    ($name:literal) => {
        concat!(
            "#!lua flags=no-writes\n",
            include_str!("../../../../lua/members.lua"),
            include_str!(concat!("../../../../lua/", $name, ".lua"))
        )
    };
}

/// `lua/project.lua` (with the prelude): applies a batch's outbox rows of one board (absolute
/// score + version each), in order, in one call.
pub static PROJECT: LazyLock<Script> = LazyLock::new(|| Script::new(with_prelude!("project")));
/// `lua/repair.lua` (with the prelude): sets a member to its source score and version, never
/// over a newer one.
pub static REPAIR: LazyLock<Script> = LazyLock::new(|| Script::new(with_prelude!("repair")));
/// `lua/remove_orphan.lua` (with the prelude): removes a member with no source row, unless it
/// changed.
pub static REMOVE_ORPHAN: LazyLock<Script> =
    LazyLock::new(|| Script::new(with_prelude!("remove_orphan")));
/// `lua/lock_renew.lua` and `lua/lock_release.lua`: compare-and-renew / compare-and-release.
/// No prelude: `lock_renew.lua` must have no `#!lua` line (see its header).
pub static LOCK_RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../../../lua/lock_renew.lua")));
pub static LOCK_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../../../lua/lock_release.lua")));
/// `lua/switch_generation.lua`: makes a rebuilt board live atomically.
pub static SWITCH_GENERATION: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../../../lua/switch_generation.lua")));

/// `lua/rebuild_chunk.lua` (with the prelude): writes a chunk of source rows into a board's
/// rebuilt generation.
pub static REBUILD_CHUNK: LazyLock<Script> =
    LazyLock::new(|| Script::new(with_prelude!("rebuild_chunk")));

/// `lua/seal_new.lua` (with the prelude): seals the empty projection of a board PostgreSQL
/// has just created, when none of its keys exists.
pub static SEAL_NEW: LazyLock<Script> = LazyLock::new(|| Script::new(with_prelude!("seal_new")));

/// `lua/observe.lua` (read-only): each user's stored version and the score of the member it
/// names, in one snapshot.
pub static OBSERVE: LazyLock<Script> = LazyLock::new(|| Script::new(read_only!("observe")));

/// `lua/read.lua` (read-only): every leaderboard read of one board, with its seal, in one call.
pub static READ: LazyLock<Script> = LazyLock::new(|| Script::new(read_only!("read")));

/// `lua/top.lua` (read-only): a board's first N, its seal and its change sequence, in one
/// snapshot (the projector's `rank.top_changed`, `top.rs`).
pub static TOP: LazyLock<Script> = LazyLock::new(|| Script::new(read_only!("top")));

/// Adds one EVALSHA call of `script` to `pipe`; chain `.arg(..)` for its arguments.
pub fn evalsha<'a>(pipe: &'a mut Pipeline, script: &Script, keys: &[&str]) -> &'a mut Pipeline {
    let cmd = pipe.cmd("EVALSHA").arg(script.get_hash()).arg(keys.len());
    for key in keys {
        cmd.arg(*key);
    }
    cmd
}

/// One EVALSHA call of `script` with `keys` keys, as a command alone (the reads): chain
/// `.arg(..)` for its keys, then its arguments, and send it with [`send_script`]. The keys are
/// written straight into the command: `redis::ScriptInvocation` copies each key and argument
/// into a buffer of its own first, then into the command.
pub fn evalsha_cmd(script: &Script, keys: usize) -> Cmd {
    let mut cmd = Cmd::with_capacity(3 + keys + 4, 256);
    cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys);
    cmd
}

/// Sends `cmd` (an [`evalsha_cmd`] of `script`); after a NOSCRIPT (a Redis restarted or
/// failed over has an empty script cache) loads `script` and sends it once more.
pub async fn send_script<C: ConnectionLike, T: FromRedisValue>(
    conn: &mut C,
    script: &Script,
    cmd: &Cmd,
) -> RedisResult<T> {
    match cmd.query_async(conn).await {
        Err(e) if e.code() == Some("NOSCRIPT") => {
            tracing::info!("a script is missing from Redis (restart or failover?): loading it");
            script.prepare_invoke().load_async(conn).await?;
            cmd.query_async(conn).await
        }
        reply => reply,
    }
}

/// Sends a pipeline of EVALSHA calls of `script` (built with [`evalsha`], with
/// `ignore_errors` set) and returns one reply per call. After a Redis restart or failover the
/// script cache is empty (NOSCRIPT): the script is loaded and the whole pipeline sent once
/// more, which the callers' scripts make harmless. A second NOSCRIPT is returned as it is.
pub async fn send_pipeline<C: ConnectionLike, T: FromRedisValue>(
    conn: &mut C,
    script: &Script,
    pipe: &Pipeline,
) -> RedisResult<Vec<RedisResult<T>>> {
    send_pipeline_of(conn, &[script], pipe).await
}

/// [`send_pipeline`] of a pipeline that calls several scripts (the projector's batch: the
/// projection script and the top read): after a NOSCRIPT each of them is loaded, then the
/// whole pipeline is sent once more.
pub async fn send_pipeline_of<C: ConnectionLike, T: FromRedisValue>(
    conn: &mut C,
    scripts: &[&Script],
    pipe: &Pipeline,
) -> RedisResult<Vec<RedisResult<T>>> {
    let replies: Vec<RedisResult<T>> = pipe.query_async(conn).await?;
    if !replies
        .iter()
        .any(|r| matches!(r, Err(e) if e.code() == Some("NOSCRIPT")))
    {
        return Ok(replies);
    }
    tracing::info!("a script is missing from Redis (restart or failover?): loading it");
    for script in scripts {
        script.prepare_invoke().load_async(conn).await?;
    }
    pipe.query_async(conn).await
}

#[cfg(test)]
mod tests {
    /// The scripts with the prelude start with its `#!lua` line (Redis reads the flags from
    /// the first line only) and define `wrong_type` once, before their own text uses it.
    #[test]
    fn the_prelude_comes_first_and_once() {
        for (name, text) in [
            ("project", with_prelude!("project")),
            ("repair", with_prelude!("repair")),
            ("remove_orphan", with_prelude!("remove_orphan")),
            ("rebuild_chunk", with_prelude!("rebuild_chunk")),
        ] {
            assert!(text.starts_with("#!lua\n"), "{name}");
            assert_eq!(text.lines().filter(|l| *l == "#!lua").count(), 1, "{name}");
            assert_eq!(
                text.matches("local function wrong_type(").count(),
                1,
                "{name}"
            );
            let defined = text.find("local function wrong_type(");
            let used = text.find("local problem = wrong_type(");
            assert!(defined < used && used.is_some(), "{name}");
        }
        // Without a shebang Redis lets the renewal run when memory is full.
        assert!(!include_str!("../../../../lua/lock_renew.lua").starts_with("#!"));
    }
}
