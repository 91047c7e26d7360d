//! The one capped exponential back-off of the daemons (after the style of neon's
//! `libs/utils/src/backoff.rs`): the first retry waits `first`, each next one twice as long,
//! up to `max`, and a success starts over. The wait gives way to shutdown.
//!
//! Used by the projector's claim loop after a failed batch (100 ms up to
//! `projector.outage_backoff_max_ms`), its LISTEN session (250 ms up to 10 s) and the wait for
//! PostgreSQL at start-up (250 ms up to 5 s).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    current: Duration,
}

impl Backoff {
    /// Waits `first`, then doubles up to `max`. The first wait is `first` even if it is over
    /// `max`, as the loops it replaces did.
    pub fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max,
            current: first,
        }
    }

    /// How long the next wait lasts (what a log line calls `retry_in`).
    pub fn current(&self) -> Duration {
        self.current
    }

    /// The next wait is `first` again: the operation succeeded.
    pub fn reset(&mut self) {
        self.current = self.first;
    }

    /// Sleeps [`Self::current`] and doubles the next wait (capped at `max`). False when
    /// `cancel` fired first: the caller stops.
    pub async fn wait(&mut self, cancel: &CancellationToken) -> bool {
        let delay = self.current;
        self.current = self.current.saturating_mul(2).min(self.max);
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn doubles_up_to_the_cap_and_starts_over_after_a_reset() {
        let cancel = CancellationToken::new();
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_millis(40));
        let mut waits = Vec::new();
        for _ in 0..4 {
            let delay = b.current();
            waits.push(delay);
            let started = std::time::Instant::now();
            assert!(b.wait(&cancel).await);
            assert!(
                started.elapsed() >= delay,
                "{:?} < {delay:?}",
                started.elapsed()
            );
        }
        assert_eq!(waits, [10, 20, 40, 40].map(Duration::from_millis).to_vec());
        b.reset();
        assert_eq!(b.current(), Duration::from_millis(10));
    }

    #[tokio::test]
    async fn the_first_wait_is_not_capped() {
        let mut b = Backoff::new(Duration::from_millis(30), Duration::from_millis(10));
        assert_eq!(b.current(), Duration::from_millis(30));
        assert!(b.wait(&CancellationToken::new()).await);
        assert_eq!(b.current(), Duration::from_millis(10));
    }

    #[tokio::test]
    async fn a_cancelled_wait_returns_false_at_once() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let mut b = Backoff::new(Duration::from_secs(60), Duration::from_secs(60));
        let started = std::time::Instant::now();
        assert!(!b.wait(&cancel).await);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
