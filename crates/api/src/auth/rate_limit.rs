//! A token bucket per caller: past `api.rate_limit_per_s` (bursts up to
//! `api.rate_limit_burst`) a request waits the time this returns, answered 429 with
//! `Retry-After` by the guard.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Keys seen by the rate limiter are forgotten after this many requests' worth of sweeps, so
/// a flood of addresses cannot grow its memory without bound.
const SWEEP_EVERY: u64 = 10_000;

pub struct Limiter {
    buckets: DefaultKeyedRateLimiter<String>,
    seen: AtomicU64,
}

impl Limiter {
    /// None when `per_s` is 0 (no limit).
    pub fn new(per_s: u32, burst: u32) -> Option<Limiter> {
        let per_s = NonZeroU32::new(per_s)?;
        let burst = NonZeroU32::new(burst).unwrap_or(per_s);
        Some(Self::of(Quota::per_second(per_s).allow_burst(burst)))
    }

    /// None when `per_min` is 0 (no limit): the players' limit.
    pub fn per_minute(per_min: u32, burst: u32) -> Option<Limiter> {
        let per_min = NonZeroU32::new(per_min)?;
        let burst = NonZeroU32::new(burst).unwrap_or(per_min);
        Some(Self::of(Quota::per_minute(per_min).allow_burst(burst)))
    }

    fn of(quota: Quota) -> Limiter {
        Limiter {
            buckets: RateLimiter::keyed(quota),
            seen: AtomicU64::new(0),
        }
    }

    /// Ok, or how long to wait.
    pub(super) fn check(&self, key: &str) -> Result<(), Duration> {
        if self
            .seen
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            self.buckets.retain_recent();
        }
        self.buckets
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}
