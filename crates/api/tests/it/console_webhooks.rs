//! The console's webhook pages (issue 40): the subscriptions with their circuits, a
//! subscription's lanes, parked deliveries and gaps, and the requeue of ticked parked
//! deliveries, which the dispatcher then sends once more. Never a secret.

use crate::common;
use crate::console::{FORM, assert_no_leak, page, request};

use axum::http::StatusCode;
use common::{TestEnv, app_with, send_with_headers};
use ledgerboard_core::db::Database;
use ledgerboard_core::webhook::{self, NewSubscription, UrlRules};
use ledgerboard_testkit::TEST_TOKEN;

#[tokio::test]
async fn the_console_shows_subscriptions_and_requeues_parked_deliveries() {
    let env = TestEnv::new(|_| {}).await;
    let app = app_with(&env.settings);
    let db = Database::connect(&env.settings.database, "console-webhooks").expect("pool");
    let created = webhook::create(
        &db,
        &NewSubscription {
            url: "https://receiver.example/hooks".into(),
            kinds: vec!["score.accepted".into()],
            lanes: Some(2),
            secret: Some("a-secret-of-enough-length".into()),
            ..NewSubscription::default()
        },
        UrlRules::STRICT,
    )
    .await
    .expect("subscription");
    let id = created.subscription.id.clone();
    // Two deliveries the dispatcher gave up on, as its fail statement parks them.
    let client = env.db.client().await;
    for position in [7_i64, 9] {
        client
            .execute(
                "INSERT INTO webhook_parked
                     (subscription_id, position, event_id, kind, board_id, body, attempts, last_error)
                 VALUES ($1, $2, gen_random_uuid(), 'score.accepted', 'arena', '{}', 12,
                         'answered 503')",
                &[&id, &position],
            )
            .await
            .expect("park");
    }

    let (status, list) = page(&app, "/console/webhooks").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert!(list.contains(&format!("data-id=\"{id}\"")), "{list}");
    assert!(list.contains("https://receiver.example/hooks"), "{list}");
    assert!(
        !list.contains("a-secret-of-enough-length"),
        "a secret shown: {list}"
    );

    let uri = format!("/console/webhooks/{id}");
    let (status, detail) = page(&app, &uri).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert!(
        detail.contains("data-lane=\"0\"") && detail.contains("data-lane=\"1\""),
        "{detail}"
    );
    assert!(
        detail.contains("data-position=\"7\"") && detail.contains("answered 503"),
        "{detail}"
    );
    assert!(
        !detail.contains("a-secret-of-enough-length"),
        "a secret shown: {detail}"
    );
    let csrf = detail
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token on the page");

    // Requeue the one at 7: only it is marked; the page says so.
    let (status, headers, answer) = send_with_headers(
        &app,
        request(
            "POST",
            &format!("{uri}/requeue"),
            Some(TEST_TOKEN),
            Some((FORM, &format!("csrf={csrf}&position=7"))),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{answer}");
    let to = headers
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("a redirect");
    assert!(to.starts_with(&uri) && to.contains("1+of+1"), "{to}");
    let requeued: Vec<i64> = client
        .query(
            "SELECT position FROM webhook_parked WHERE subscription_id = $1
               AND requeued_at IS NOT NULL ORDER BY position",
            &[&id],
        )
        .await
        .expect("parked")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(requeued, vec![7]);
    let (_, detail) = page(&app, &uri).await;
    assert!(detail.contains("(2, 1 requeued)"), "{detail}");

    // A position that is not one is the console's own 400; an unknown subscription its 404.
    let (status, _, answer) = send_with_headers(
        &app,
        request(
            "POST",
            &format!("{uri}/requeue"),
            Some(TEST_TOKEN),
            Some((FORM, &format!("csrf={csrf}&position=x"))),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer.contains("not a position"), "{answer}");
    assert_no_leak("a bad position", &answer);
    let (status, answer) = page(&app, "/console/webhooks/nobody").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert_no_leak("an unknown subscription", &answer);
}
