//! A receiver that is down gets at most the circuit's threshold of requests and then one trial
//! per open time; a slow receiver (2 s an answer, within the 3 s timeout, so its circuit stays
//! closed) holds only its own lanes' delivery slots: the other subscriptions' events keep
//! flowing meanwhile. When the dead receiver is back, the trial closes the circuit and every
//! event is delivered.

use std::time::{Duration, Instant};

use crate::common::{Answer, Receiver, env, post, start_dispatcher, subscribe, written};
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::webhook;
use ledgerboard_testkit::wait_until;

#[tokio::test]
async fn an_open_circuit_spares_a_dead_receiver_and_a_slow_one_stalls_no_one_else() {
    let env = env(|s| {
        let d = &mut s.dispatcher;
        d.circuit_threshold = 3;
        d.circuit_open_ms = Millis::of(1_500);
        // Few delivery slots: the slow receiver's lanes must not take them all.
        d.workers = Count::of(4);
        d.request_timeout_ms = Millis::of(3_000);
    })
    .await;
    let db = env.database();
    let down = Receiver::start().await;
    down.script(vec![], Answer::Status(500));
    let slow = Receiver::start().await;
    slow.script(vec![], Answer::Slow(Duration::from_secs(2)));
    let healthy = Receiver::start().await;
    let down_sub = subscribe(&db, &down, "down", 1, &[]).await;
    subscribe(&db, &slow, "slow", 2, &[]).await;
    subscribe(&db, &healthy, "healthy", 2, &[]).await;
    let (cancel, task) = start_dispatcher(&env);

    // Events for 6 s; each must reach the healthy receiver soon after it was written, while
    // the slow receiver holds its lanes 2 s a delivery and the dead one fails.
    let window = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut i = 0;
    while window.elapsed() < Duration::from_secs(6) {
        let id = post(&db, &format!("cb{}", i % 4), "u", 1).await;
        let posted = Instant::now();
        wait_until(Duration::from_secs(5), || async {
            healthy.delivered_ids().contains(&id)
        })
        .await
        .unwrap_or_else(|| panic!("event {i} did not reach the healthy receiver within 5 s"));
        slowest = slowest.max(posted.elapsed());
        i += 1;
    }
    let elapsed = window.elapsed();
    // The dead receiver: the threshold's requests, then at most one trial per open time.
    let trials = (elapsed.as_millis() / 1_500) as u64 + 1;
    assert!(
        down.requests() <= 3 + trials,
        "{} requests to a dead receiver in {elapsed:?} (threshold 3, at most {trials} trials)",
        down.requests()
    );
    let detail = webhook::get(&db, &down_sub).await.expect("get");
    assert_ne!(detail.subscription.circuit, "closed", "{detail:?}");
    assert!(
        slow.delivered_ids().len() >= 2,
        "the slow receiver is served too: {}",
        slow.delivered_ids().len()
    );
    // Less than one slow answer: no healthy delivery waited behind one.
    assert!(
        slowest < Duration::from_millis(1_500),
        "the healthy receiver waited {slowest:?} for an event"
    );

    // Back up: the next trial closes the circuit and the backlog goes through.
    down.script(vec![], Answer::Ok);
    let client = env.db.client().await;
    let expected = written(&client).await;
    wait_until(Duration::from_secs(30), || async {
        down.delivered_ids() == expected
    })
    .await
    .expect("every event reaches the receiver once it is back");
    let detail = webhook::get(&db, &down_sub).await.expect("get");
    assert_eq!(detail.subscription.circuit, "closed");
    assert_eq!(detail.subscription.failures, 0);
    eprintln!(
        "{i} events in {elapsed:?}: healthy receiver's slowest {slowest:?}; dead receiver got {} requests before it recovered",
        down.requests()
    );
    cancel.cancel();
    task.await.expect("dispatcher");
}
