//! https receivers: delivered over rustls to a certificate that chains to `dispatcher.ca_file`;
//! a certificate of another CA is refused (the lane says why and retries); with
//! `dispatcher.allow_http = false` (the default) an http:// subscription is never sent to.

use std::time::Duration;

use crate::common::{Receiver, env, last_error, post, start_dispatcher, subscribe_url};
use ledgerboard_core::webhook;
use ledgerboard_testkit::tls::TestPki;
use ledgerboard_testkit::wait_until;

#[tokio::test]
async fn https_is_delivered_to_a_trusted_certificate_only_and_http_only_when_allowed() {
    let pki = TestPki::generate();
    let ca_file = pki.ca_file.to_string_lossy().into_owned();
    let env = env(|s| {
        s.dispatcher.allow_http = false;
        s.dispatcher.ca_file = ca_file;
    })
    .await;
    let db = env.database();
    let trusted = Receiver::start_with(Some((&pki.server.cert, &pki.server.key))).await;
    let foreign = Receiver::start_with(Some((&pki.foreign.cert, &pki.foreign.key))).await;
    let plain = Receiver::start().await;
    let ok = subscribe_url(
        &db,
        &trusted,
        format!("https://127.0.0.1:{}/tls", trusted.addr.port()),
    )
    .await;
    let refused = subscribe_url(
        &db,
        &foreign,
        format!("https://127.0.0.1:{}/tls", foreign.addr.port()),
    )
    .await;
    let http = subscribe_url(&db, &plain, plain.url("plain")).await;
    let (cancel, task) = start_dispatcher(&env);

    let id = post(&db, "tls", "u1", 1).await;
    wait_until(Duration::from_secs(20), || async {
        trusted.delivered_ids().contains(&id)
    })
    .await
    .expect("delivered over TLS");
    let failed = wait_until(Duration::from_secs(20), || async {
        last_error(&db, &refused).await.contains("TLS")
            && last_error(&db, &http)
                .await
                .contains("dispatcher.allow_http")
    })
    .await;
    assert!(
        failed.is_some(),
        "the foreign certificate and the http URL must fail with their reasons: {:?} / {:?}",
        last_error(&db, &refused).await,
        last_error(&db, &http).await
    );
    assert_eq!(
        foreign.requests(),
        0,
        "no request through a refused handshake"
    );
    assert_eq!(plain.requests(), 0, "nothing sent to http://");
    assert_eq!(
        webhook::get(&db, &ok)
            .await
            .expect("get")
            .subscription
            .failures,
        0
    );
    cancel.cancel();
    task.await.expect("dispatcher");
}
