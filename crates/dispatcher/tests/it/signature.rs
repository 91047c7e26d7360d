//! What a receiver gets: the event's JSON, its id and kind in headers, the trace of the command
//! that caused it, and a signature that core's `verify` accepts, and refuses once the body,
//! the secret or the time is not the one signed.

use std::time::Duration;

use crate::common::{Receiver, env, new_traceparent, start_dispatcher, subscribe};
use ledgerboard_core::board::{self, apply_score_command, definition};
use ledgerboard_core::model::{BoardId, Submitted};
use ledgerboard_core::webhook::signature::{
    DEFAULT_TOLERANCE, EVENT_ID_HEADER, EVENT_KIND_HEADER, SIGNATURE_HEADER, VerifyError, verify,
};
use ledgerboard_testkit::wait_until;

#[tokio::test]
async fn a_delivery_is_signed_and_forged_stale_or_wrongly_keyed_ones_are_refused() {
    let env = env(|_| {}).await;
    let db = env.database();
    let receiver = Receiver::start().await;
    let sub = subscribe(&db, &receiver, "sig", 1, &["sg"]).await;
    let secret = {
        // The receiver was given the secret at creation; read it back from what it verifies.
        let client = env.db.client().await;
        let row = client
            .query_one(
                "SELECT secret FROM webhook_subscriptions WHERE subscription_id = $1",
                &[&sub],
            )
            .await
            .expect("secret");
        row.get::<_, String>(0)
    };
    let (cancel, task) = start_dispatcher(&env);

    // One command with a trace context; another board's is not subscribed to.
    let traceparent = new_traceparent();
    let id = uuid::Uuid::new_v4();
    let def = definition::get(&db, &BoardId::parse("sg").expect("board"))
        .await
        .expect("definition");
    let cmd = board::command(
        &def,
        &id.to_string(),
        "alice",
        None,
        Some(&Submitted::One(serde_json::Number::from(3))),
        None,
    )
    .expect("command");
    apply_score_command(&db, &cmd, Some(&traceparent))
        .await
        .expect("applied");
    crate::common::post(&db, "other", "bob", 1).await;
    wait_until(Duration::from_secs(20), || async {
        receiver.delivered_ids().contains(&id)
    })
    .await
    .expect("delivered");
    let log = receiver.log();
    assert_eq!(log.len(), 1, "only the subscribed board's event: {log:?}");
    let r = &log[0];
    assert_eq!(r.header(EVENT_ID_HEADER), Some(id.to_string().as_str()));
    assert_eq!(r.header(EVENT_KIND_HEADER), Some("score.accepted"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    // The trace goes on from the command's span.
    let trace_id = traceparent.split('-').nth(1).expect("trace id");
    assert!(
        r.header("traceparent")
            .is_some_and(|tp| tp.split('-').nth(1) == Some(trace_id)),
        "{:?} does not continue {traceparent}",
        r.header("traceparent")
    );
    let body: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
    assert_eq!(body["id"], id.to_string());
    assert_eq!(body["board"], "sg");
    assert_eq!(body["user_id"], "alice");
    assert_eq!(body["data"]["score"], 3);
    assert_eq!(body["traceparent"], traceparent);

    let header = r.header(SIGNATURE_HEADER).expect("signed").to_owned();
    let t = verify(
        &secret,
        &header,
        &r.body,
        r.verified.clone().expect("verified"),
        DEFAULT_TOLERANCE,
    )
    .expect("the receiver's check");
    // A forged body, another secret, a replay after the tolerance, a malformed header.
    let mut forged = r.body.to_vec();
    forged.extend_from_slice(b" ");
    assert_eq!(
        verify(&secret, &header, &forged, t, DEFAULT_TOLERANCE),
        Err(VerifyError::Mismatch)
    );
    assert_eq!(
        verify(
            "whsec_not_the_secret_at_all",
            &header,
            &r.body,
            t,
            DEFAULT_TOLERANCE
        ),
        Err(VerifyError::Mismatch)
    );
    assert!(matches!(
        verify(&secret, &header, &r.body, t + 301, DEFAULT_TOLERANCE),
        Err(VerifyError::Stale { .. })
    ));
    assert!(matches!(
        verify(&secret, "v1=abc", &r.body, t, DEFAULT_TOLERANCE),
        Err(VerifyError::Malformed(_))
    ));
    // The timestamp is signed: the same signature under another time is refused.
    let moved = header.replacen(&format!("t={t}"), &format!("t={}", t + 1), 1);
    assert_eq!(
        verify(&secret, &moved, &r.body, t, DEFAULT_TOLERANCE),
        Err(VerifyError::Mismatch)
    );
    // What a receiver in another language computes: HMAC-SHA256 of "{t}.{body}", in hex.
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mut message = format!("{t}.").into_bytes();
    message.extend_from_slice(&r.body);
    let expected: String = ring::hmac::sign(&key, &message)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(header, format!("t={t},v1={expected}"));
    // A receiver given the wrong secret refuses every delivery (400): nothing counts as
    // delivered, the dispatcher retries.
    receiver.set_secret("whsec_the_wrong_secret_0000");
    let next = crate::common::post(&db, "sg", "carol", 1).await;
    wait_until(Duration::from_secs(20), || async {
        receiver
            .log()
            .iter()
            .any(|r| r.id == next && r.verified == Err(VerifyError::Mismatch))
    })
    .await
    .expect("refused");
    assert!(!receiver.delivered_ids().contains(&next));
    cancel.cancel();
    task.await.expect("dispatcher");
}
