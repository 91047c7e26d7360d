//! Player tokens this process has verified, kept until they expire: a game client sends the
//! same token with every request for its whole life (minutes), and verifying an EdDSA
//! signature each time cost 9-18% of the commands' rate in the benchmark (docs/performance.md).
//!
//! Kept by the SHA-256 digest of the whole token, signature included: a token that differs in
//! any byte (a forged signature, an edited claim) is another entry and is verified in full. A
//! hit is checked against its `exp` again (with the same skew as a verification), so a kept
//! token stops working when it expires. Keys change only when the api restarts, which empties
//! this. Bounded: a shard that is full is emptied, so a flood of distinct valid tokens costs
//! verifications, never memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ledgerboard_core::auth::player::{self, CLOCK_SKEW_S, Player};
use sha2::{Digest, Sha256};

/// Shards, so that concurrent requests rarely wait on one lock.
const SHARDS: usize = 16;
/// Tokens kept per shard (16 × 4,096: 65,536 players active at once per api process).
const PER_SHARD: usize = 4_096;

type Shard = Mutex<HashMap<[u8; 32], Arc<Player>>>;

pub struct Verified {
    shards: Vec<Shard>,
}

impl Default for Verified {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl Verified {
    /// The player `token` stands for: kept from an earlier verification while unexpired, else
    /// `verify`'s answer (kept when it is a player).
    pub fn get_or_verify<E>(
        &self,
        token: &str,
        verify: impl FnOnce() -> Result<Player, E>,
    ) -> Result<Arc<Player>, E> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let shard = &self.shards[usize::from(digest[0]) % SHARDS];
        let now = player::now_s();
        // A poisoned lock (a panic while it was held) only means a cache entry may be lost.
        let kept = shard
            .lock()
            .map(|map| map.get(&digest).cloned())
            .unwrap_or_default();
        // An expired one is verified again, which refuses it with its own code.
        if let Some(p) = kept
            && now <= p.exp + CLOCK_SKEW_S
        {
            return Ok(p);
        }
        let p = Arc::new(verify()?);
        if let Ok(mut map) = shard.lock() {
            if map.len() >= PER_SHARD {
                map.clear();
            }
            map.insert(digest, p.clone());
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledgerboard_core::auth::player::BoardPattern;
    use ledgerboard_core::model::UserId;

    fn alice(exp: u64) -> Result<Player, String> {
        Ok(Player {
            user: UserId::parse("alice").map_err(|e| e.to_string())?,
            boards: vec![BoardPattern::parse("runs").ok_or("a board pattern")?],
            kid: "k1".into(),
            exp,
        })
    }

    #[test]
    fn a_token_is_verified_once_while_valid_and_again_once_expired() -> Result<(), String> {
        let verified = Verified::default();
        let calls = std::cell::Cell::new(0);
        let verify = |exp: u64| {
            calls.set(calls.get() + 1);
            alice(exp)
        };
        let later = player::now_s() + 600;
        for _ in 0..3 {
            let p = verified.get_or_verify("token-a", || verify(later))?;
            assert_eq!(p.user.as_str(), "alice");
        }
        assert_eq!(calls.get(), 1, "kept after the first verification");
        // Another token (one byte apart) is verified on its own.
        verified.get_or_verify("token-b", || verify(later))?;
        assert_eq!(calls.get(), 2);
        // A refusal is not kept.
        assert!(
            verified
                .get_or_verify("token-c", || Err::<Player, ()>(()))
                .is_err()
        );
        assert!(
            verified
                .get_or_verify("token-c", || Err::<Player, ()>(()))
                .is_err()
        );
        // A kept token past its exp (and the skew) is verified again.
        let past = player::now_s() - CLOCK_SKEW_S - 1;
        verified.get_or_verify("token-d", || verify(past))?;
        let again = verified.get_or_verify("token-d", || Err::<Player, &str>("expired"));
        assert_eq!(again.err(), Some("expired"));
        Ok(())
    }
}
