//! The event log (migration V20, core `events/`): one `score.accepted` per recorded command,
//! with the member's tuple before and after it, in the order of the member's versions, even
//! when commands for one member race; the sequencer's positions; the feed's pages, filters,
//! window and expired cursors.

use std::sync::Arc;

use crate::common::{Env, env};
use ledgerboard_core::board::definition::{Definitions, get};
use ledgerboard_core::board::{self, apply_score_command};
use ledgerboard_core::events::feed::{self, Filter};
use ledgerboard_core::events::sequence::{sequence_all, sweep};
use ledgerboard_core::events::{EventsError, Kind};
use ledgerboard_core::model::{BoardId, Submitted};
use serde_json::Number;
use std::time::Duration;
use uuid::Uuid;

async fn declare(env: &Env, board: &str, operator: &str) {
    let (min_delta, max_delta) = if operator == "add" {
        (Some(-50_i64), Some(50_i64))
    } else {
        (None, None)
    };
    env.client
        .execute(
            "INSERT INTO board_definitions
                 (board_id, operator, sort, tie_break, min_score, max_score, min_delta, max_delta)
             VALUES ($1, $2, 'descending', 'user_id', -1000000, 1000000, $3, $4)",
            &[&board, &operator, &min_delta, &max_delta],
        )
        .await
        .expect("declare");
}

async fn post(
    db: &ledgerboard_core::db::Database,
    board: &str,
    event: Uuid,
    user: &str,
    value: i64,
) {
    let id = BoardId::parse(board).expect("board");
    let def = get(db, &id).await.expect("definition");
    let n = Submitted::One(Number::from(value));
    let (score, delta) = if def.operator.as_str() == "add" {
        (None, Some(&n))
    } else {
        (Some(&n), None)
    };
    let cmd = board::command(&def, &event.to_string(), user, score, delta, None).expect("command");
    apply_score_command(db, &cmd, None).await.expect("applied");
}

#[tokio::test]
async fn every_recorded_command_is_one_score_event_with_its_previous_tuple_in_version_order() {
    let env = env().await;
    declare(&env, "ev_add", "add").await;
    declare(&env, "ev_best", "best").await;
    // 40 commands for one member of an add board at once: they queue on its row lock, and
    // those whose snapshot predates the previous commit are run again (lb_event_race).
    let db = Arc::new(env.db.clone());
    let mut tasks = Vec::new();
    for i in 0..40 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            post(&db, "ev_add", Uuid::new_v4(), "racer", 1 + i % 3).await;
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    // A best board: improving, not improving, improving.
    for (i, v) in [10, 5, 20].into_iter().enumerate() {
        post(&env.db, "ev_best", Uuid::from_u128(i as u128 + 1), "b1", v).await;
    }
    // A repeat of the first is no new event.
    post(&env.db, "ev_best", Uuid::from_u128(1), "b1", 10).await;

    assert!(
        sequence_all(&env.db).await.expect("sequence"),
        "the lock was free"
    );
    let definitions = Definitions::new(Duration::from_secs(60));
    let page = feed::page(&env.db, &definitions, None, &Filter::default(), 1_000)
        .await
        .expect("page");
    assert_eq!(
        page.events.len(),
        43,
        "one event per recorded command: {page:?}"
    );
    let recorded: i64 = env
        .client
        .query_one("SELECT count(*) FROM score_events", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(recorded, 43);
    let positions: Vec<i64> = page.events.iter().map(|e| e.position).collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "increasing: {positions:?}"
    );

    // The racer's events: versions 1..=40 in position order, each previous the one before.
    let racer: Vec<_> = page
        .events
        .iter()
        .filter(|e| e.user_id.as_deref() == Some("racer"))
        .collect();
    assert_eq!(racer.len(), 40);
    let mut last: Option<(i64, i64)> = None;
    for e in &racer {
        assert_eq!(e.kind, "score.accepted");
        let version = e.data["version"].as_i64().expect("version");
        let score = e.data["score"].as_i64().expect("score");
        match last {
            None => assert!(
                e.data["previous"].is_null(),
                "a first entry has no previous: {e:?}"
            ),
            Some((v, s)) => {
                assert_eq!(version, v + 1, "versions in position order: {e:?}");
                assert_eq!(e.data["previous"]["version"].as_i64(), Some(v), "{e:?}");
                assert_eq!(e.data["previous"]["score"].as_i64(), Some(s), "{e:?}");
            }
        }
        last = Some((version, score));
    }
    let user_score: i64 = env
        .client
        .query_one(
            "SELECT score FROM user_scores WHERE board_id = 'ev_add' AND user_id = 'racer'",
            &[],
        )
        .await
        .expect("score")
        .get(0);
    assert_eq!(last.map(|l| l.1), Some(user_score));

    // The best board: improved, not (the standing tuple twice), improved over 10.
    let best: Vec<_> = page
        .events
        .iter()
        .filter(|e| e.board == "ev_best")
        .collect();
    let seen: Vec<(bool, i64, Option<i64>)> = best
        .iter()
        .map(|e| {
            (
                e.data["improved"].as_bool().expect("improved"),
                e.data["score"].as_i64().expect("score"),
                e.data["previous"]["score"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (true, 10, None),
            (false, 10, Some(10)),
            (true, 20, Some(10))
        ]
    );
    assert_eq!(
        best[0].id,
        Uuid::from_u128(1),
        "a score's event id is its command's"
    );

    // Filters: by board and kind; a kind never written matches nothing.
    let only_best = Filter {
        kinds: vec![Kind::ScoreAccepted],
        boards: vec![BoardId::parse("ev_best").expect("board")],
    };
    let page2 = feed::page(&env.db, &definitions, None, &only_best, 2)
        .await
        .expect("page");
    assert_eq!(page2.events.len(), 2);
    assert_eq!(
        page2.next, page2.events[1].position,
        "a full page resumes after its last"
    );
    let page3 = feed::page(&env.db, &definitions, Some(page2.next), &only_best, 2)
        .await
        .expect("page");
    assert_eq!(page3.events.len(), 1);
    assert_eq!(page3.next, page.head, "a short page resumes from the head");
    let none = Filter {
        kinds: vec![Kind::PeriodClosed],
        boards: vec![],
    };
    let empty = feed::page(&env.db, &definitions, None, &none, 10)
        .await
        .expect("page");
    assert!(empty.events.is_empty());
    assert_eq!(empty.next, page.head);

    // Retention: everything older than 0 hours goes; the cursor before it has expired.
    env.client
        .execute(
            "UPDATE events SET occurred_at = occurred_at - interval '2 hours'",
            &[],
        )
        .await
        .expect("age");
    assert_eq!(sweep(&env.db, 1, 1, 7).await.expect("sweep"), 43);
    match feed::page(&env.db, &definitions, Some(0), &Filter::default(), 10).await {
        Err(EventsError::CursorExpired { swept_through, .. }) => {
            assert_eq!(swept_through, page.head)
        }
        other => panic!("expected cursor_expired, got {other:?}"),
    }
    let fresh = feed::page(&env.db, &definitions, None, &Filter::default(), 10)
        .await
        .expect("page");
    assert!(fresh.events.is_empty());
}
