//! The retention loop of a running projector: published outbox rows and, when event retention
//! is on, old events whose outbox row is gone are deleted on its schedule, and nothing newer.
//! (`projection.rs` tests one retention pass and its lock; this is the loop that runs it.)

use crate::common;

use std::time::Duration;

use ledgerboard_core::config::{Count, Millis};
use ledgerboard_projector::Projector;
use ledgerboard_testkit::wait_until;
use tokio_util::sync::CancellationToken;

use common::TestEnv;

#[tokio::test]
async fn the_running_projector_deletes_rows_and_events_past_their_retention() {
    let env = TestEnv::new(|s| {
        s.projector.published_retention_ms = Millis::of(3_600_000);
        s.projector.event_retention_ms = Millis::of(86_400_000);
        s.projector.retention_interval_ms = Millis::of(100);
        s.projector.retention_batch = Count::of(15);
    })
    .await;
    env.seed("b", 10, 100).await;
    let cancel = CancellationToken::new();
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let running = tokio::spawn(projector.run(cancel.clone()));
    assert!(env.wait_drained(Duration::from_secs(20)).await);
    // 40 rows published two hours ago, their events three days old; the other 60 just now.
    let client = env.db.client().await;
    client
        .batch_execute(
            "UPDATE leaderboard_outbox SET published_at = now() - interval '2 hours' WHERE id <= 40;
             UPDATE score_events SET created_at = now() - interval '3 days';",
        )
        .await
        .expect("age rows");
    let counts = || async {
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM leaderboard_outbox),
                        (SELECT count(*) FROM score_events)",
                &[],
            )
            .await
            .expect("counts");
        (row.get::<_, i64>(0), row.get::<_, i64>(1))
    };
    let took = wait_until(Duration::from_secs(10), || async {
        counts().await == (60, 60)
    })
    .await;
    cancel.cancel();
    running.await.expect("stops");
    assert!(
        took.is_some(),
        "(outbox rows, events) left: {:?}",
        counts().await
    );
    // The rows left are the recent ones, and each still has its event.
    let orphans: i64 = client
        .query_one(
            "SELECT count(*) FROM leaderboard_outbox o
             WHERE o.id <= 40 OR NOT EXISTS (SELECT 1 FROM score_events e WHERE e.event_id = o.event_id)",
            &[],
        )
        .await
        .expect("left rows")
        .get(0);
    assert_eq!(orphans, 0);
}
