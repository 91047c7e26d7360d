//! Receivers at non-public addresses: with `dispatcher.allow_private_addresses = false` (the
//! default) a subscription whose URL names loopback, as an address or as a name that resolves
//! to it, is never sent to, and its lane's error names the address and the setting. (Every
//! other test of this crate delivers to loopback with the setting on.)

use std::time::Duration;

use crate::common::{Receiver, env, last_error, post, start_dispatcher, subscribe_url};
use ledgerboard_testkit::wait_until;

#[tokio::test]
async fn a_receiver_at_a_loopback_address_or_name_is_never_sent_to() {
    let env = env(|s| s.dispatcher.allow_private_addresses = false).await;
    let db = env.database();
    let receiver = Receiver::start().await;
    let port = receiver.addr.port();
    let by_address = subscribe_url(&db, &receiver, receiver.url("by-address")).await;
    // A name, resolved by the dispatcher: what a DNS record pointing inside looks like.
    let by_name = subscribe_url(&db, &receiver, format!("http://localhost:{port}/by-name")).await;
    let (cancel, task) = start_dispatcher(&env);

    post(&db, "inside", "u1", 1).await;
    let refused = wait_until(Duration::from_secs(20), || async {
        let (a, n) = (
            last_error(&db, &by_address).await,
            last_error(&db, &by_name).await,
        );
        a.contains("dispatcher.allow_private_addresses")
            && n.contains("dispatcher.allow_private_addresses")
    })
    .await;
    let (a, n) = (
        last_error(&db, &by_address).await,
        last_error(&db, &by_name).await,
    );
    assert!(
        refused.is_some(),
        "both deliveries must be refused for the address: {a:?} / {n:?}"
    );
    assert!(
        a.contains("127.0.0.1") && a.contains("loopback"),
        "the error names the address and its kind: {a}"
    );
    assert!(n.contains("localhost is at"), "{n}");
    assert_eq!(
        receiver.requests(),
        0,
        "no request reaches a loopback receiver"
    );
    cancel.cancel();
    task.await.expect("dispatcher");
}
