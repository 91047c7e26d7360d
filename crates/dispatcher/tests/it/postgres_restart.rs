//! PostgreSQL restarted while events are being delivered (`pg_ctl restart -m fast` on a private
//! cluster, the harness's `PostgresServer`: never the shared server): the dispatcher's claims,
//! reads and advances fail for a while and are retried, and every event reaches the receiver.

use std::time::{Duration, Instant};

use crate::common::{
    Receiver, assert_all_signed, assert_in_order_per_board, post, start_dispatcher, subscribe,
};
use ledgerboard_core::config::Millis;
use ledgerboard_dispatcher::settings::Sections;
use ledgerboard_testkit::{PostgresServer, TestRedis, wait_until};

#[tokio::test]
async fn postgres_restarted_during_delivery_loses_nothing() {
    let pg = PostgresServer::start().unwrap_or_else(|e| panic!("a private PostgreSQL: {e}"));
    let redis = TestRedis::new();
    let mut settings = ledgerboard_testkit::settings_for::<Sections>(&pg.url(), &redis, &[]);
    settings.database.connect_timeout_ms = Millis::of(1_000);
    settings.database.pool_wait_timeout_ms = Millis::of(1_000);
    settings.events.sequence_interval_ms = Millis::of(20);
    let d = &mut settings.dispatcher;
    d.allow_http = true;
    d.admin_listen = "127.0.0.1:0".into();
    d.request_timeout_ms = Millis::of(1_000);
    d.connect_timeout_ms = Millis::of(1_000);
    d.backoff_first_ms = Millis::of(20);
    d.backoff_max_ms = Millis::of(200);
    d.poll_interval_ms = Millis::of(50);
    settings.validate().expect("settings");
    ledgerboard_core::db::migrate(&settings.database)
        .await
        .expect("migrate");
    let db = ledgerboard_core::db::Database::connect(&settings.database, "pg-restart-test")
        .expect("pool");
    let receiver = Receiver::start().await;
    subscribe(&db, &receiver, "pg", 3, &[]).await;
    let env_like = crate::common::Dispatching {
        settings: settings.clone(),
        db: db.clone(),
    };
    let (cancel, task) = start_dispatcher(&env_like);

    let poster = {
        let db = db.clone();
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..200 {
                ids.push(post(&db, &format!("pr{}", i % 5), &format!("u{}", i % 9), 1).await);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            ids
        })
    };
    wait_until(Duration::from_secs(30), || async {
        receiver.delivered_ids().len() >= 40
    })
    .await
    .expect("deliveries under way before the restart");
    let restart = Instant::now();
    let pg = tokio::task::spawn_blocking(move || {
        pg.ctl(&["-m", "fast", "restart"]).expect("pg_ctl restart");
        pg
    })
    .await
    .expect("restart");
    let restarted_in = restart.elapsed();
    let ids = poster.await.expect("poster");
    let expected: std::collections::BTreeSet<_> = ids.into_iter().collect();
    // Well within the lease (60 s): the lanes held across the restart resume when PostgreSQL
    // answers again, they do not wait for their leases to run out.
    let recovered = wait_until(Duration::from_secs(20), || async {
        receiver.delivered_ids() == expected
    })
    .await;
    let Some(recovered) = recovered else {
        // What the lanes say, so that a failure here can be told apart: a lease not given back,
        // a lane backing off, an open circuit, or events not sequenced.
        let lanes = ledgerboard_core::webhook::list(&db, None, 10).await;
        let mut detail = Vec::new();
        for s in lanes.iter().flatten() {
            detail.push(format!(
                "{:?}",
                ledgerboard_core::webhook::get(&db, &s.id).await
            ));
        }
        panic!(
            "{} of {} delivered after the restart; lanes: {detail:?}",
            receiver.delivered_ids().len(),
            expected.len()
        )
    };
    let log = receiver.log();
    assert_all_signed(&log);
    assert_in_order_per_board(&log);
    eprintln!(
        "postgres restarted in {restarted_in:?}; every event delivered {recovered:?} after the posting ended; {} requests for {} events",
        log.len(),
        expected.len()
    );
    cancel.cancel();
    task.await.expect("dispatcher");
    drop(pg);
}
