//! Webhook subscriptions and lanes (core `webhook/`, migration V20): creation and its checks,
//! lanes by board hash, the claim's lease and its fencing, failures, parking and the circuit,
//! the window a sparse lane moves by, and retention, which keeps what an enabled
//! subscription has not had and records what it deleted anyway.

use std::time::Duration;

use crate::common::{Env, env};
use ledgerboard_core::board::definition::{Definitions, get};
use ledgerboard_core::board::{self, apply_score_command};
use ledgerboard_core::events::sequence::{sequence_all, sweep};
use ledgerboard_core::model::{BoardId, Submitted};
use ledgerboard_core::webhook::lane::{self, Circuit, Failure};
use ledgerboard_core::webhook::{self, Change, NewSubscription, UrlRules, WebhookError, parked};
use serde_json::Number;
use uuid::Uuid;

async fn post(env: &Env, board: &str, user: &str) -> Uuid {
    let id = Uuid::new_v4();
    let def = get(&env.db, &BoardId::parse(board).expect("board"))
        .await
        .expect("definition");
    let delta = Submitted::One(Number::from(1));
    let cmd =
        board::command(&def, &id.to_string(), user, None, Some(&delta), None).expect("command");
    apply_score_command(&env.db, &cmd, None)
        .await
        .expect("applied");
    id
}

async fn lane_of(env: &Env, board: &str, lanes: i32) -> i32 {
    env.client
        .query_one("SELECT lb_webhook_lane($1, $2)", &[&board, &lanes])
        .await
        .expect("lane")
        .get(0)
}

const CIRCUIT: Circuit = Circuit {
    threshold: 3,
    open_for: Duration::from_secs(3_600),
};
const LEASE: Duration = Duration::from_secs(60);

fn new(url: &str, lanes: i32) -> NewSubscription {
    NewSubscription {
        url: url.into(),
        lanes: Some(lanes),
        ..NewSubscription::default()
    }
}

#[tokio::test]
async fn subscriptions_are_checked_and_start_at_the_head() {
    let env = env().await;
    post(&env, "w1", "a").await;
    sequence_all(&env.db).await.expect("sequence");
    for (bad, code) in [
        (new("http://example.com/h", 1), "webhook_http_refused"),
        (new("https://example.com/h", 0), "invalid_lanes"),
        (new("https://example.com/h", 65), "invalid_lanes"),
        (
            NewSubscription {
                kinds: vec!["score.maybe".into()],
                ..new("https://example.com/h", 1)
            },
            "invalid_kind",
        ),
        (
            NewSubscription {
                secret: Some("short".into()),
                ..new("https://example.com/h", 1)
            },
            "invalid_secret",
        ),
    ] {
        let e = webhook::create(&env.db, &bad, UrlRules::STRICT)
            .await
            .expect_err("refused");
        assert_eq!(e.code(), code, "{e}");
    }
    let created = webhook::create(
        &env.db,
        &NewSubscription {
            kinds: vec!["score.accepted".into()],
            boards: vec!["w1".into()],
            ..new("https://example.com/h", 4)
        },
        UrlRules::STRICT,
    )
    .await
    .expect("created");
    assert!(created.secret.starts_with("whsec_"), "{created:?}");
    let id = created.subscription.id.clone();
    let detail = webhook::get(&env.db, &id).await.expect("get");
    assert_eq!(detail.subscription.start_position, 1, "after the one event");
    assert_eq!(detail.lane_status.len(), 4);
    assert!(detail.lane_status.iter().all(|l| l.position == 1));
    let json = serde_json::to_string(&detail).expect("json");
    assert!(
        !json.contains(&created.secret),
        "a read never shows the secret"
    );

    let changed = webhook::update(
        &env.db,
        &id,
        &Change {
            enabled: Some(false),
            boards: Some(vec![]),
            ..Change::default()
        },
        UrlRules::STRICT,
    )
    .await
    .expect("update");
    assert!(!changed.enabled && changed.boards.is_empty());
    assert_eq!(changed.kinds, vec!["score.accepted"]);
    let listed = webhook::list(&env.db, None, 10).await.expect("list");
    assert_eq!(listed.len(), 1);
    webhook::delete(&env.db, &id).await.expect("delete");
    assert!(matches!(
        webhook::get(&env.db, &id).await,
        Err(WebhookError::Unknown)
    ));
}

#[tokio::test]
async fn lanes_are_leased_fenced_failed_parked_and_the_circuit_opens_and_tries_once() {
    let env = env().await;
    let definitions = Definitions::new(Duration::from_secs(60));
    let sub = webhook::create(&env.db, &new("https://example.com/h", 2), UrlRules::STRICT)
        .await
        .expect("created")
        .subscription
        .id;
    // Nothing to deliver: nothing is claimed.
    assert!(
        lane::claim(&env.db, "a/0", LEASE, 10, CIRCUIT)
            .await
            .expect("claim")
            .is_empty()
    );
    // Two boards on different lanes of two.
    let (b0, b1) = {
        let mut on = [None, None];
        for i in 0..50 {
            let b = format!("lb{i}");
            let l = lane_of(&env, &b, 2).await as usize;
            on[l].get_or_insert(b);
        }
        (
            on[0].clone().expect("a board on lane 0"),
            on[1].clone().expect("a board on lane 1"),
        )
    };
    let e0 = post(&env, &b0, "u").await;
    let e1 = post(&env, &b1, "u").await;
    sequence_all(&env.db).await.expect("sequence");

    let claimed = lane::claim(&env.db, "a/1", LEASE, 10, CIRCUIT)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 2, "both lanes are behind: {claimed:?}");
    assert!(
        lane::claim(&env.db, "b/1", LEASE, 10, CIRCUIT)
            .await
            .expect("claim")
            .is_empty(),
        "leased lanes are not claimed again"
    );
    let l0 = claimed
        .iter()
        .find(|l| l.lane == 0)
        .expect("lane 0")
        .clone();
    let batch = lane::next(&env.db, &definitions, &l0, l0.position, 10)
        .await
        .expect("next");
    let ids: Vec<Uuid> = batch.events.iter().map(|p| p.event.id).collect();
    assert_eq!(ids, vec![e0], "a lane reads only its boards' events");
    assert!(!ids.contains(&e1));

    // Fencing: another holder moves nothing.
    let mut stranger = l0.clone();
    stranger.holder = "b/1".into();
    let pos = batch.events[0].event.position;
    assert!(
        !lane::advance(&env.db, &stranger, pos, LEASE, true)
            .await
            .expect("advance")
    );
    assert!(
        lane::advance(&env.db, &l0, pos, LEASE, true)
            .await
            .expect("advance")
    );

    // Lane 1 fails: attempts, back-off, then parked at 2 attempts; the circuit opens at 3.
    let l1 = claimed
        .iter()
        .find(|l| l.lane == 1)
        .expect("lane 1")
        .clone();
    let event = lane::next(&env.db, &definitions, &l1, l1.position, 10)
        .await
        .expect("next")
        .events
        .remove(0)
        .event;
    let failure = |error| Failure {
        error,
        retry_in: Duration::ZERO,
        max_attempts: 2,
        circuit: CIRCUIT,
    };
    let f = lane::fail(&env.db, &l1, &event, "{}", failure("answered 500"))
        .await
        .expect("fail")
        .expect("held");
    assert_eq!((f.attempts, f.parked, f.circuit_open), (1, false, false));
    // The lease was given back with the failure: a new claim takes the lane.
    let again = lane::claim(&env.db, "a/2", LEASE, 10, CIRCUIT)
        .await
        .expect("claim");
    assert_eq!(again.len(), 1);
    assert_eq!(
        lane::fail(&env.db, &l1, &event, "{}", failure("x"))
            .await
            .expect("fail"),
        None,
        "the old claim is fenced off"
    );
    let f = lane::fail(
        &env.db,
        &again[0],
        &event,
        "{\"id\":1}",
        failure("answered 502"),
    )
    .await
    .expect("fail")
    .expect("held");
    assert_eq!((f.attempts, f.parked, f.circuit_open), (2, true, false));
    let rows = parked::list(&env.db, &sub, 0, 10).await.expect("parked");
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].event_id, rows[0].attempts), (e1, 2));
    let detail = webhook::get(&env.db, &sub).await.expect("get");
    assert_eq!(
        detail.lane_status[1].position, event.position,
        "the lane moved past it"
    );

    // One more failure opens the circuit: nothing is claimed until its time is over.
    lane::release(&env.db, &l0).await.expect("release");
    let e2 = post(&env, &b0, "v").await;
    sequence_all(&env.db).await.expect("sequence");
    let c = lane::claim(&env.db, "a/3", LEASE, 10, CIRCUIT)
        .await
        .expect("claim");
    assert_eq!(c.len(), 2, "{c:?}");
    let c0 = c.iter().find(|l| l.lane == 0).expect("lane 0");
    let ev = lane::next(&env.db, &definitions, c0, c0.position, 10)
        .await
        .expect("next")
        .events
        .remove(0)
        .event;
    assert_eq!(ev.id, e2);
    let f = lane::fail(&env.db, c0, &ev, "{}", failure("timeout"))
        .await
        .expect("fail")
        .expect("held");
    assert!(f.circuit_open, "{f:?}");
    assert_eq!(
        webhook::get(&env.db, &sub)
            .await
            .expect("get")
            .subscription
            .circuit,
        "open"
    );
    assert!(
        lane::claim(&env.db, "a/4", LEASE, 10, CIRCUIT)
            .await
            .expect("claim")
            .is_empty()
    );
    // Its time over (moved back by hand): one lane goes, as the trial, and only one.
    env.client
        .execute(
            "UPDATE webhook_subscriptions SET circuit_open_until = now() - interval '1 second'",
            &[],
        )
        .await
        .expect("expire");
    let c1 = c.iter().find(|l| l.lane == 1).expect("lane 1");
    lane::release(&env.db, c1).await.expect("release");
    post(&env, &b1, "w").await;
    sequence_all(&env.db).await.expect("sequence");
    let trial = lane::claim(&env.db, "a/5", LEASE, 10, CIRCUIT)
        .await
        .expect("claim");
    assert_eq!(trial.len(), 1, "one trial: {trial:?}");
    assert!(trial[0].trial);
    assert!(
        lane::claim(&env.db, "a/6", LEASE, 10, CIRCUIT)
            .await
            .expect("claim")
            .is_empty()
    );
    let batch = lane::next(&env.db, &definitions, &trial[0], trial[0].position, 10)
        .await
        .expect("next");
    let p = batch.events[0].event.position;
    assert!(
        lane::advance(&env.db, &trial[0], p, LEASE, true)
            .await
            .expect("advance")
    );
    let s = webhook::get(&env.db, &sub).await.expect("get").subscription;
    assert_eq!(
        (s.circuit.as_str(), s.failures),
        ("closed", 0),
        "the trial closed it"
    );

    // Requeued parked deliveries are claimed once, by lease.
    assert_eq!(
        parked::requeue(&env.db, &sub, &[]).await.expect("requeue"),
        1
    );
    let r = parked::claim(&env.db, "a/7", LEASE, 10)
        .await
        .expect("claim");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].body, "{\"id\":1}", "the body as it was signed");
    assert!(
        parked::claim(&env.db, "a/8", LEASE, 10)
            .await
            .expect("claim")
            .is_empty()
    );
    assert!(parked::delivered(&env.db, &r[0]).await.expect("done"));
    assert!(
        parked::list(&env.db, &sub, 0, 10)
            .await
            .expect("list")
            .is_empty()
    );
}

#[tokio::test]
async fn a_sparse_lane_moves_by_windows_and_retention_keeps_what_it_has_not_had() {
    let env = env().await;
    let definitions = Definitions::new(Duration::from_secs(60));
    let sub = webhook::create(
        &env.db,
        &NewSubscription {
            boards: vec!["rare".into()],
            ..new("https://example.com/h", 1)
        },
        UrlRules::STRICT,
    )
    .await
    .expect("created")
    .subscription
    .id;
    let other = webhook::create(&env.db, &new("https://example.com/o", 1), UrlRules::STRICT)
        .await
        .expect("created")
        .subscription
        .id;
    webhook::update(
        &env.db,
        &other,
        &Change {
            enabled: Some(false),
            ..Change::default()
        },
        UrlRules::STRICT,
    )
    .await
    .expect("disable");
    // 25,000 events of other boards (a bulk insert into the log: only positions matter here),
    // then one of the subscribed board.
    env.client
        .execute(
            "INSERT INTO events (position, event_id, kind, board_id, occurred_at, payload)
             SELECT nextval('event_positions'), gen_random_uuid(), 'period.closed', 'busy', now(), '{}'
             FROM generate_series(1, 25000)",
            &[],
        )
        .await
        .expect("bulk events");
    let rare = post(&env, "rare", "u").await;
    sequence_all(&env.db).await.expect("sequence");

    let l = lane::claim(
        &env.db,
        "a/1",
        LEASE,
        10,
        Circuit {
            threshold: 3,
            open_for: LEASE,
        },
    )
    .await
    .expect("claim")
    .remove(0);
    let mut position = l.position;
    let mut reads = 0;
    let found = loop {
        let batch = lane::next(&env.db, &definitions, &l, position, 10)
            .await
            .expect("next");
        reads += 1;
        assert!(
            batch.upto - position <= lane::WINDOW,
            "a read covers one window at most"
        );
        if let Some(p) = batch.events.first() {
            break p.event.id;
        }
        assert!(
            lane::advance(&env.db, &l, batch.upto, LEASE, false)
                .await
                .expect("advance")
        );
        position = batch.upto;
    };
    assert_eq!(found, rare);
    assert_eq!(reads, 3, "25,001 positions in windows of 10,000");

    // Retention: every event is 2 hours old and the retention is 1 hour. The lane stands at
    // 20,000: what is above it is kept (within the 100-hour hold), what is below goes. The
    // disabled subscription's lane (at 0) holds nothing back.
    env.client
        .execute(
            "UPDATE events SET occurred_at = occurred_at - interval '2 hours'",
            &[],
        )
        .await
        .expect("age");
    let deleted = sweep(&env.db, 1, 100, 100_000).await.expect("sweep");
    assert_eq!(deleted, 20_000);
    let kept: i64 = env
        .client
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(kept, 5_001);
    // Past the hold they go too, and the lane records what it lost.
    assert_eq!(sweep(&env.db, 1, 1, 100_000).await.expect("sweep"), 5_001);
    let batch = lane::next(&env.db, &definitions, &l, position, 10)
        .await
        .expect("next");
    assert_eq!(batch.gap, Some(25_001));
    assert!(batch.events.is_empty());
    let detail = webhook::get(&env.db, &sub).await.expect("get");
    assert_eq!(detail.gaps.len(), 1, "{detail:?}");
    assert_eq!(
        (
            detail.gaps[0].after_position,
            detail.gaps[0].through_position
        ),
        (20_000, 25_001)
    );
    assert_eq!(detail.lane_status[0].position, 25_001);
}
