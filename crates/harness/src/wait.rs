//! The one way a test or a run waits for something to happen: poll a condition until it holds
//! or a limit passes. A fixed sleep either waits too long or passes before the thing happened.
//! The harness (browser, daemons), the testkit and every test use these.

use std::time::Duration;

/// How often [`wait_until`] and [`wait_until_blocking`] check their condition.
const POLL: Duration = Duration::from_millis(20);

/// Polls `condition` every 20 ms until it holds or `limit` has passed: the one way a test
/// waits for something to happen (a fixed sleep either waits too long or passes before the
/// thing happened). `Some(elapsed)` once it holds, `None` when the time ran out; the condition
/// is checked once more at the deadline, so a slow check cannot miss it. The caller turns
/// `None` into a failure (`expect`), never into a silent move on.
pub async fn wait_until<F, Fut>(limit: Duration, condition: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    wait_until_every(limit, POLL, condition).await
}

/// [`wait_until`] with checks `every` apart, for a condition that is costly to check (a page
/// loaded in the browser for each look): polling it every 20 ms would only load the machine
/// that is to make it hold.
pub async fn wait_until_every<F, Fut>(
    limit: Duration,
    every: Duration,
    mut condition: F,
) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    loop {
        let expired = started.elapsed() >= limit;
        if condition().await {
            return Some(started.elapsed());
        }
        if expired {
            return None;
        }
        tokio::time::sleep(every).await;
    }
}

/// [`wait_until`] for a caller that is not async (a system test's threads, a blocking
/// condition such as an HTTP request through the harness's [`crate::http`]): the same polling, with the
/// thread asleep between checks.
pub fn wait_until_blocking(
    limit: Duration,
    mut condition: impl FnMut() -> bool,
) -> Option<Duration> {
    let started = std::time::Instant::now();
    loop {
        let expired = started.elapsed() >= limit;
        if condition() {
            return Some(started.elapsed());
        }
        if expired {
            return None;
        }
        std::thread::sleep(POLL);
    }
}
