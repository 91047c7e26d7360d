//! PostgreSQL failing under the dispatcher, on a private cluster (the harness's
//! `PostgresServer`: never the shared server):
//!
//! - restarted while events are being delivered (`pg_ctl restart -m fast`): the dispatcher's
//!   claims, reads and advances fail for a while and are retried, and every event reaches the
//!   receiver;
//! - claims that commit but whose answer never comes back (commits held waiting for a
//!   synchronous standby that does not exist, until the client's bound runs out and cancels
//!   the wait: PostgreSQL then keeps the commit): what they leased is given back as soon as
//!   PostgreSQL answers again, not when the leases run out.

use std::time::{Duration, Instant};

use crate::common::{
    Receiver, assert_all_signed, assert_in_order_per_board, post, start_dispatcher, subscribe,
};
use ledgerboard_core::config::Millis;
use ledgerboard_dispatcher::settings::{Sections, Settings};
use ledgerboard_testkit::{PostgresServer, TestRedis, wait_until};

/// The dispatcher's settings on the private cluster: short bounds and quick retries.
fn settings_on(pg: &PostgresServer, redis: &TestRedis) -> Settings {
    let mut settings = ledgerboard_testkit::settings_for::<Sections>(&pg.url(), redis, &[]);
    settings.database.connect_timeout_ms = Millis::of(1_000);
    settings.database.pool_wait_timeout_ms = Millis::of(1_000);
    settings.events.sequence_interval_ms = Millis::of(20);
    let d = &mut settings.dispatcher;
    d.allow_http = true;
    d.allow_private_addresses = true;
    d.admin_listen = "127.0.0.1:0".into();
    d.request_timeout_ms = Millis::of(1_000);
    d.connect_timeout_ms = Millis::of(1_000);
    d.backoff_first_ms = Millis::of(20);
    d.backoff_max_ms = Millis::of(200);
    d.poll_interval_ms = Millis::of(50);
    settings
}

#[tokio::test]
async fn postgres_restarted_during_delivery_loses_nothing() {
    let pg = PostgresServer::start().unwrap_or_else(|e| panic!("a private PostgreSQL: {e}"));
    let redis = TestRedis::new();
    let settings = settings_on(&pg, &redis);
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

/// A session of the test's own on the private cluster whose commits never wait for a standby.
async fn admin(pg: &PostgresServer) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("connect to the private PostgreSQL");
    tokio::spawn(conn);
    client
        .batch_execute("SET synchronous_commit = local")
        .await
        .expect("local commits");
    client
}

#[tokio::test]
async fn a_claim_whose_answer_is_lost_gives_its_lanes_back_when_postgres_answers() {
    let pg = PostgresServer::start().unwrap_or_else(|e| panic!("a private PostgreSQL: {e}"));
    let redis = TestRedis::new();
    let mut settings = settings_on(&pg, &redis);
    // The client's bound on a round trip: the statement timeout and a second.
    settings.database.statement_timeout_ms = Millis::of(300);
    settings.validate().expect("settings");
    let lease = settings.dispatcher.lease();
    ledgerboard_core::db::migrate(&settings.database)
        .await
        .expect("migrate");
    let db = ledgerboard_core::db::Database::connect(&settings.database, "lost-answer-test")
        .expect("pool");
    let sql = admin(&pg).await;
    let receiver = Receiver::start().await;
    let id = subscribe(&db, &receiver, "lost", 3, &[]).await;
    sql.execute(
        "UPDATE webhook_subscriptions SET enabled = false WHERE subscription_id = $1",
        &[&id],
    )
    .await
    .expect("disable");
    let env_like = crate::common::Dispatching {
        settings: settings.clone(),
        db: db.clone(),
    };
    let (cancel, task) = start_dispatcher(&env_like);
    let mut expected = std::collections::BTreeSet::new();
    for i in 0..30 {
        expected.insert(post(&db, &format!("la{}", i % 5), &format!("u{i}"), 1).await);
    }
    let count = |q: &'static str| {
        let sql = &sql;
        async move {
            let row = sql.query_one(q, &[]).await.expect(q);
            row.get::<_, i64>(0)
        }
    };
    wait_until(Duration::from_secs(30), || async {
        count("SELECT count(*) FROM events").await >= 30
    })
    .await
    .expect("the events sequenced");

    // From here every commit waits for a standby that does not exist: the dispatcher's claims
    // commit, but each answer comes back only once the client has given up on it.
    pg.configure(&["synchronous_standby_names = 'nobody'"])
        .expect("configure");
    pg.ctl(&["reload"]).expect("reload");
    sql.execute(
        "UPDATE webhook_subscriptions SET enabled = true WHERE subscription_id = $1",
        &[&id],
    )
    .await
    .expect("enable");
    // Before anything gives them back: lanes leased by claims the dispatcher never heard from
    // (a claim that answered would have started a turn, and its read, which waits for no
    // standby, would have delivered something).
    wait_until(Duration::from_secs(30), || async {
        count("SELECT count(*) FROM webhook_lanes WHERE lease_holder IS NOT NULL").await > 0
    })
    .await
    .expect("a claim committed while its answer was lost");
    assert!(
        receiver.delivered_ids().is_empty(),
        "a claim was answered while commits waited: the test did not lose an answer"
    );

    pg.configure(&["synchronous_standby_names = ''"])
        .expect("configure");
    pg.ctl(&["reload"]).expect("reload");
    let answered = Instant::now();
    // Well within the lease: the lanes are given back, not left until their leases run out.
    let bound = lease / 3;
    let delivered = wait_until(bound, || async { receiver.delivered_ids() == expected }).await;
    assert!(
        delivered.is_some(),
        "{} of {} delivered {bound:?} after PostgreSQL answered again (lease {lease:?}); leased lanes: {}",
        receiver.delivered_ids().len(),
        expected.len(),
        count("SELECT count(*) FROM webhook_lanes WHERE lease_holder IS NOT NULL").await
    );
    let log = receiver.log();
    assert_all_signed(&log);
    assert_in_order_per_board(&log);
    eprintln!(
        "every event delivered {:?} after commits stopped waiting",
        answered.elapsed()
    );
    cancel.cancel();
    task.await.expect("dispatcher");
    drop(pg);
}
