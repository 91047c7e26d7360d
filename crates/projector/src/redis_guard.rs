//! Redis settings that would make the projection lie: an eviction policy that may drop
//! leaderboard keys (`allkeys-*`), or memory close to `maxmemory`. `volatile-*` policies only
//! evict keys with a TTL, which here are the event markers: losing one costs nothing, since
//! the stored version still rejects a repeat. In cluster mode every primary is checked: each
//! holds its own share of the boards.

use ledgerboard_core::projection::{ReadModelError, Store};
use redis::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisMemory {
    /// The server (its redacted URL) or, in cluster mode, the primary's address.
    pub node: String,
    pub policy: String,
    /// 0: no limit.
    pub maxmemory: u64,
    pub used_memory: u64,
}

pub async fn inspect(store: &Store) -> Result<Vec<RedisMemory>, ReadModelError> {
    let on_each = |args: &[&str]| {
        let mut cmd = redis::cmd(args[0]);
        cmd.arg(&args[1..]);
        store.on_each_primary(cmd)
    };
    let policies = on_each(&["CONFIG", "GET", "maxmemory-policy"]).await?;
    let limits = on_each(&["CONFIG", "GET", "maxmemory"]).await?;
    let infos = on_each(&["INFO", "memory"]).await?;
    let mut nodes = Vec::new();
    // A reply this cannot read is an error, never an empty policy or a zero: an unread
    // `allkeys-lru` must not pass as safe (the caller reports what it could not read).
    let unreadable =
        |node: &str, what: &str| ReadModelError::Reply(format!("{node}: {what} could not be read"));
    for (node, policy) in policies {
        let reply_of = |replies: &[(String, Value)]| {
            replies
                .iter()
                .find(|(n, _)| *n == node)
                .map(|(_, v)| v.clone())
        };
        // CONFIG GET answers [name, value] (RESP2) or {name: value} (RESP3).
        let config_value = |reply: Option<Value>| -> Option<String> {
            let pairs: Vec<String> = redis::from_redis_value(reply?).ok()?;
            pairs.get(1).cloned()
        };
        let info: String = reply_of(&infos)
            .and_then(|v| redis::from_redis_value(v).ok())
            .ok_or_else(|| unreadable(&node, "INFO memory"))?;
        let used_memory = info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| unreadable(&node, "INFO memory's used_memory"))?;
        nodes.push(RedisMemory {
            policy: config_value(Some(policy))
                .ok_or_else(|| unreadable(&node, "maxmemory-policy"))?,
            maxmemory: config_value(reply_of(&limits))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| unreadable(&node, "maxmemory"))?,
            used_memory,
            node,
        });
    }
    Ok(nodes)
}

/// What is wrong with these Redis nodes for a projection, if anything.
pub fn problems_of_all(nodes: &[RedisMemory], warn_ratio: f64) -> Vec<String> {
    nodes
        .iter()
        .flat_map(|memory| {
            problems(memory, warn_ratio)
                .into_iter()
                .map(|problem| format!("{}: {problem}", memory.node))
        })
        .collect()
}

/// What is wrong with this Redis for a projection, if anything.
pub fn problems(memory: &RedisMemory, warn_ratio: f64) -> Vec<String> {
    let mut found = Vec::new();
    if memory.policy.starts_with("allkeys-") {
        found.push(format!(
            "maxmemory-policy is {}: Redis may evict leaderboard keys; use noeviction (or volatile-*)",
            memory.policy
        ));
    }
    if memory.maxmemory > 0 && memory.used_memory as f64 >= warn_ratio * memory.maxmemory as f64 {
        found.push(format!(
            "Redis uses {} of its {} bytes maxmemory (warning at {:.0}%)",
            memory.used_memory,
            memory.maxmemory,
            warn_ratio * 100.0
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_and_memory() {
        let ok = RedisMemory {
            node: "redis://127.0.0.1:6379".into(),
            policy: "noeviction".into(),
            maxmemory: 0,
            used_memory: 10,
        };
        assert!(problems(&ok, 0.9).is_empty());
        let volatile = RedisMemory {
            policy: "volatile-lru".into(),
            ..ok.clone()
        };
        assert!(problems(&volatile, 0.9).is_empty());
        let evicting = RedisMemory {
            policy: "allkeys-lru".into(),
            ..ok.clone()
        };
        assert_eq!(problems(&evicting, 0.9).len(), 1);
        let full = RedisMemory {
            maxmemory: 100,
            used_memory: 95,
            ..ok
        };
        assert_eq!(problems(&full, 0.9).len(), 1);
        assert!(problems(&full, 0.99).is_empty());
        let all = problems_of_all(&[evicting, full], 0.9);
        assert_eq!(all.len(), 2);
        assert!(all[0].starts_with("redis://127.0.0.1:6379: maxmemory-policy"));
    }
}
