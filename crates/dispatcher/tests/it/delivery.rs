//! A receiver that fails for a while (500s), then hangs past the dispatcher's timeout, then
//! recovers: every event is delivered, in order per board, every signature valid.

use std::time::Duration;

use crate::common::{
    Answer, Receiver, assert_all_signed, assert_in_order_per_board, env, post, start_dispatcher,
    subscribe, written,
};
use ledgerboard_testkit::wait_until;

#[tokio::test]
async fn failures_then_timeouts_then_recovery_deliver_every_event_in_order_per_board() {
    let env = env(|_| {}).await;
    let db = env.database();
    let receiver = Receiver::start().await;
    // 10 answers of 500, then 3 that hang past the 1 s timeout, then 200s.
    let mut script = vec![Answer::Status(500); 10];
    script.extend([Answer::Hang(Duration::from_millis(1_500)); 3]);
    receiver.script(script, Answer::Ok);
    let sub = subscribe(&db, &receiver, "hooks/a", 2, &[]).await;
    let (cancel, task) = start_dispatcher(&env);

    // 3 boards, 20 commands each, interleaved, for 5 users.
    for i in 0..20 {
        for board in ["wa", "wb", "wc"] {
            post(&db, board, &format!("u{}", i % 5), 1 + i).await;
        }
    }
    let client = env.db.client().await;
    let expected = written(&client).await;
    assert_eq!(expected.len(), 60);
    wait_until(Duration::from_secs(60), || async {
        receiver.delivered_ids() == expected
    })
    .await
    .unwrap_or_else(|| {
        panic!(
            "not every event delivered: {} of {}; {} requests",
            receiver.delivered_ids().len(),
            expected.len(),
            receiver.requests()
        )
    });
    let log = receiver.log();
    assert_all_signed(&log);
    assert_in_order_per_board(&log);
    assert!(
        log.iter()
            .filter(|r| r.answer == Answer::Status(500))
            .count()
            == 10
            && log
                .iter()
                .filter(|r| matches!(r.answer, Answer::Hang(_)))
                .count()
                == 3,
        "the script ran: {log:?}"
    );
    // Every lane ends at the log's last position, with nothing parked. A lane writes its
    // position after the receiver has answered (every 100 ms and at the end of a batch), so
    // the last delivery can be seen before its position is: wait for the write, bounded.
    let at_head =
        |d: &ledgerboard_core::webhook::Detail| d.lane_status.iter().all(|l| l.position == d.head);
    let last = std::sync::Mutex::new(None);
    let reached = wait_until(Duration::from_secs(10), || async {
        let d = ledgerboard_core::webhook::get(&db, &sub)
            .await
            .expect("get");
        let done = at_head(&d);
        *last.lock().expect("not poisoned") = Some(d);
        done
    })
    .await;
    let detail = last
        .into_inner()
        .expect("not poisoned")
        .expect("read at least once");
    assert!(
        reached.is_some(),
        "the lanes did not reach the log's head: {detail:?}"
    );
    assert_eq!(detail.parked, 0);
    eprintln!(
        "{} events, {} requests ({} duplicates)",
        expected.len(),
        log.len(),
        log.iter().filter(|r| r.delivered()).count() - expected.len()
    );
    cancel.cancel();
    task.await.expect("dispatcher");
}
