//! Redis settings that would make the projection lie: an eviction policy that may drop
//! leaderboard keys (`allkeys-*`), or memory close to `maxmemory`. `volatile-*` policies only
//! evict keys with a TTL, which here are the event markers: losing one costs nothing, since
//! the stored version still rejects a repeat.

use ledgerboard_core::cache::{Cache, CacheError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisMemory {
    pub policy: String,
    /// 0: no limit.
    pub maxmemory: u64,
    pub used_memory: u64,
}

pub async fn inspect(cache: &Cache) -> Result<RedisMemory, CacheError> {
    let mut conn = cache.connection().await?;
    let policy: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async(&mut conn)
        .await?;
    let maxmemory: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query_async(&mut conn)
        .await?;
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut conn)
        .await?;
    let used_memory = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Ok(RedisMemory {
        policy: policy.get(1).cloned().unwrap_or_default(),
        maxmemory: maxmemory.get(1).and_then(|v| v.parse().ok()).unwrap_or(0),
        used_memory,
    })
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
    }
}
