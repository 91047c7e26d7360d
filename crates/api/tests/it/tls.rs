//! The daemons end to end over TLS only: a private PostgreSQL that refuses plain TCP
//! (`hostssl`), reached with `sslmode=verify-full` and `database.ca_file`, and a private
//! TLS-only Redis that requires a client certificate, reached with `rediss://`,
//! `redis.ca_file` and the client certificate. Commands go in through the api, the projector
//! (with its LISTEN session) projects them, the reconciler seals the board on request, and a
//! read comes from the projection.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::StatusCode;
use common::{Settings, app_with, get};
use ledgerboard_core::config::Millis;
use ledgerboard_core::db::tls::connect_params;
use ledgerboard_projector::Projector;
use ledgerboard_reconciler::Reconciler;
use ledgerboard_testkit::tls::{TestPki, tls_postgres, tls_redis};
use ledgerboard_testkit::wait_until;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn commands_projection_and_reads_work_over_tls_only() {
    let pki = TestPki::generate();
    let pg = tls_postgres(&pki);
    let redis = tls_redis(&pki, true);
    let mut settings = Settings::default();
    settings.database.url = format!("{}?sslmode=verify-full", pg.url()).into();
    settings.database.ca_file = pki.ca_file.display().to_string();
    settings.redis.url = redis.url().into();
    settings.redis.ca_file = pki.ca_file.display().to_string();
    settings.redis.client_cert_file = pki.client.cert_file.display().to_string();
    settings.redis.client_key_file = pki.client.key_file.display().to_string();
    settings.redis.namespace = "tls".into();
    settings.projector.poll_interval_ms = Millis::of(60_000);
    settings.shutdown.grace_ms = Millis::of(2_000);
    settings.auth.tokens = ledgerboard_testkit::test_tokens().into();
    settings.api.freshness_cache_ms = Millis::of(0);
    settings.reconciler.interval_ms = Millis::of(3_600_000);
    settings.validate().expect("settings");
    ledgerboard_core::db::migrate(&settings.database)
        .await
        .expect("migrate over verify-full");
    let db = || ledgerboard_core::db::Database::connect(&settings.database, "tls").expect("pool");
    let store = || ledgerboard_core::projection::Store::connect(&settings.redis).expect("redis");
    let app = app_with(&settings);
    let cancel = CancellationToken::new();
    let projector =
        tokio::spawn(Projector::new(settings.clone(), db(), store()).run(cancel.clone()));
    let reconciler =
        tokio::spawn(Reconciler::new(settings.clone(), db(), store()).run(cancel.clone()));

    // The projector's LISTEN session is up (a plain one could not be: the server takes TLS
    // only). The poll interval is a minute, so the projection below is woken by its NOTIFY.
    let params = connect_params(&settings.database, &settings.database.url).expect("params");
    let (admin, connection) = params.config.connect(params.tls).await.expect("admin");
    tokio::spawn(connection);
    let listening = wait_until(Duration::from_secs(30), || async {
        admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
                 WHERE a.application_name = 'ledgerboard-projector-listen' AND s.ssl",
                &[],
            )
            .await
            .expect("pg_stat_activity")
            .get::<_, i64>(0)
            == 1
    })
    .await;
    assert!(
        listening.is_some(),
        "the projector's LISTEN session over TLS"
    );

    let mut expected = BTreeMap::new();
    for (i, user) in ["ana", "bo", "cy", "ana", "dee"].iter().enumerate() {
        let delta = i as i64 + 1;
        let body = serde_json::json!({
            "event_id": uuid::Uuid::new_v4().to_string(),
            "user_id": user,
            "delta": delta,
        });
        let (status, _) = common::send_text(&app, common::command("tls", body.to_string())).await;
        assert_eq!(status, StatusCode::CREATED, "command {i}");
        *expected.entry((*user).to_owned()).or_insert(0_i64) += delta;
    }

    // Projected, sealed by the rebuild a read requests, and read from Redis.
    let last = std::cell::RefCell::new(serde_json::Value::Null);
    let read = wait_until(Duration::from_secs(30), || async {
        let (status, page) = get(&app, "/v1/boards/tls/top?limit=10").await;
        let done = status == StatusCode::OK
            && page["freshness"]["source"] == "projection"
            && page["entries"].as_array().map(Vec::len) == Some(expected.len());
        *last.borrow_mut() = page;
        done
    })
    .await;
    assert!(
        read.is_some(),
        "no read from the projection over TLS: {}",
        last.borrow()
    );
    let top = common::entry_scores(&last.borrow());
    assert_eq!(top, expected, "the projection read over TLS");
    let (status, standing) = get(&app, "/v1/boards/tls/users/ana").await;
    assert_eq!(status, StatusCode::OK, "{standing}");
    assert_eq!(standing["score"], 5, "{standing}");

    cancel.cancel();
    projector.await.expect("projector");
    reconciler.await.expect("reconciler");
}
