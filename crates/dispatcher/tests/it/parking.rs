//! An event that keeps failing is parked after `dispatcher.max_attempts`, its lane moves on to
//! the next events; requeued, it is delivered once more.

use std::time::Duration;

use crate::common::{Answer, Receiver, env, post, start_dispatcher, subscribe, written};
use ledgerboard_core::webhook::{self, parked};
use ledgerboard_testkit::wait_until;

#[tokio::test]
async fn max_attempts_park_the_event_the_lane_moves_on_and_a_requeue_delivers_it() {
    let env = env(|s| s.dispatcher.max_attempts = 3).await;
    let db = env.database();
    let receiver = Receiver::start().await;
    // The first event's three attempts fail; everything after is answered 200.
    receiver.script(vec![Answer::Status(503); 3], Answer::Ok);
    let sub = subscribe(&db, &receiver, "hooks/park", 1, &[]).await;
    let (cancel, task) = start_dispatcher(&env);

    let first = post(&db, "pk", "u1", 5).await;
    let second = post(&db, "pk", "u2", 7).await;
    // The second arrives although the first was not delivered: the lane moved past it.
    wait_until(Duration::from_secs(30), || async {
        receiver.delivered_ids().contains(&second)
    })
    .await
    .expect("the event after the parked one is delivered");
    assert!(!receiver.delivered_ids().contains(&first));
    let rows = parked::list(&db, &sub, 0, 10).await.expect("parked");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].event_id, first);
    assert_eq!(rows[0].attempts, 3);
    assert!(
        rows[0]
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("503")),
        "{rows:?}"
    );
    assert_eq!(receiver.requests(), 4, "3 attempts, then the second event");

    // Requeued: delivered once more, then no longer parked.
    assert_eq!(parked::requeue(&db, &sub, &[]).await.expect("requeue"), 1);
    wait_until(Duration::from_secs(30), || async {
        receiver.delivered_ids().contains(&first)
            && parked::list(&db, &sub, 0, 10)
                .await
                .expect("parked")
                .is_empty()
    })
    .await
    .expect("the requeued event is delivered and unparked");
    let client = env.db.client().await;
    assert_eq!(receiver.delivered_ids(), written(&client).await);
    let detail = webhook::get(&db, &sub).await.expect("get");
    assert_eq!((detail.parked, detail.requeued), (0, 0));
    // The requeued body is the event as it was first signed.
    let log = receiver.log();
    let bodies: Vec<_> = log
        .iter()
        .filter(|r| r.id == first)
        .map(|r| &r.body)
        .collect();
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{bodies:?}");
    cancel.cancel();
    task.await.expect("dispatcher");
}
