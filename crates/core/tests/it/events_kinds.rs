//! The event log's kinds other than `score.accepted` (migration V20, docs/api.md "Events"),
//! written by the statements of what they report: a period's close (`period.closed`) and a
//! run's (`competition.closed`, and `period.closed` for each board the run froze). Each is
//! written exactly once per close, with an id derived from what it reports, and nothing by a
//! close that does not close (not ended, pending, closed already). Moderation and review are
//! in `events_decisions.rs`.

use std::time::Duration;

use crate::common::{Env, env};
use ledgerboard_core::board::definition::{
    self, Column, Declaration, Definitions, Operator, Reset, Sort,
};
use ledgerboard_core::board::{self, apply_score_command, periods};
use ledgerboard_core::competition::{self, CloseOutcome, Prize, Tier};
use ledgerboard_core::events::feed::{self, Filter};
use ledgerboard_core::events::sequence::sequence_all;
use ledgerboard_core::events::{Event, Kind};
use ledgerboard_core::model::{BoardId, Submitted, UserId};
use ledgerboard_testkit::wait_until;
use serde_json::{Value, json};
use uuid::Uuid;

/// The id the log derives from `name` (`<kind>:<what>`, lb_event_id): the statements' ids are
/// compared with it to show what each derives its id from; the function itself is checked
/// against UUID v3 as another implementation computes it (`derived_ids_are_uuid_v3_…`).
pub async fn derived(env: &Env, name: &str) -> Uuid {
    env.client
        .query_one("SELECT lb_event_id($1)", &[&name])
        .await
        .expect("id")
        .get(0)
}

pub fn board(name: &str) -> BoardId {
    BoardId::parse(name).expect("board")
}

/// Every event of `kind` in the log, after sequencing what is queued: what the feed shows.
pub async fn logged(env: &Env, kind: Kind) -> Vec<Event> {
    assert!(sequence_all(&env.db).await.expect("sequence"), "lock free");
    let filter = Filter {
        kinds: vec![kind],
        boards: Vec::new(),
    };
    feed::page(
        &env.db,
        &Definitions::new(Duration::ZERO),
        None,
        &filter,
        1_000,
    )
    .await
    .expect("page")
    .events
}

/// A command of `value` (a JSON number or array) for `user` on `name`.
pub async fn post(env: &Env, name: &str, user: &str, value: &str) -> String {
    let def = definition::get(&env.db, &board(name))
        .await
        .expect("definition");
    let value: Submitted = serde_json::from_str(value).expect("value");
    let (score, delta) = if def.operator == Operator::Add {
        (None, Some(&value))
    } else {
        (Some(&value), None)
    };
    let event = Uuid::new_v4().to_string();
    let cmd = board::command(&def, &event, user, score, delta, None).expect("command");
    apply_score_command(&env.db, &cmd, None)
        .await
        .expect("applied");
    event
}

/// Opens `name`'s next period and waits until it is current.
pub async fn next_period(env: &Env, name: &str, period: &str) {
    periods::reset(&env.db, &board(name), "test")
        .await
        .expect("reset");
    wait_until(Duration::from_secs(5), || async {
        periods::current(&env.db, &board(name))
            .await
            .expect("periods")
            .is_some_and(|p| p.current != period)
    })
    .await
    .expect("the next period opens");
}

#[tokio::test]
async fn derived_ids_are_uuid_v3_of_the_kind_and_what_it_reports() {
    let env = env().await;
    // Python's uuid.uuid3(UUID("a50b50ee-db37-4f2c-9dc2-bf41e504777e"), name): RFC 9562's
    // name-based UUID (MD5), in the namespace migration V20 chose.
    for (name, want) in [
        (
            "period.closed:b:20261205T000000Z",
            "f1c4f634-5caa-336f-aaad-81e3a6a0bb79",
        ),
        ("", "2fa96cb3-9fc4-3b2c-b31a-7bf7b061813d"),
        ("review.held:é✓", "95fecf8f-601b-3c74-ae6b-f6f0c31988d3"),
    ] {
        let id = derived(&env, name).await;
        assert_eq!(id, Uuid::parse_str(want).expect("uuid"), "{name:?}");
        assert_eq!(id.get_version_num(), 3);
    }
}

/// A page reads at most a window of positions and resumes from its end: with a sparse filter
/// over a log longer than the window, the pages return each match once, never one past the
/// `next` they answer (which the following page would return again).
#[tokio::test]
async fn a_page_never_returns_an_event_past_its_next() {
    let env = env().await;
    let last = feed::WINDOW + 50;
    env.client
        .execute(
            "INSERT INTO events (position, event_id, kind, board_id, occurred_at, payload)
             SELECT g, gen_random_uuid(),
                    CASE WHEN g IN (9000, $2::bigint + 10) THEN 'review.held'
                         ELSE 'moderation.removed' END,
                    'w', now(), '{}'
             FROM generate_series(1, $1::bigint) g",
            &[&last, &feed::WINDOW],
        )
        .await
        .expect("a long log");
    let filter = Filter {
        kinds: vec![Kind::ReviewHeld],
        boards: Vec::new(),
    };
    let defs = Definitions::new(Duration::ZERO);
    let mut after = Some(5);
    let mut seen = Vec::new();
    loop {
        let page = feed::page(&env.db, &defs, after, &filter, 100)
            .await
            .expect("page");
        assert!(
            page.events
                .iter()
                .all(|e| Some(e.position) <= Some(page.next)),
            "{:?} past next {}",
            page.events.iter().map(|e| e.position).collect::<Vec<_>>(),
            page.next
        );
        seen.extend(page.events.iter().map(|e| e.position));
        if page.next == page.head {
            break;
        }
        after = Some(page.next);
    }
    assert_eq!(seen, vec![9000, feed::WINDOW + 10], "each match once");
}

#[tokio::test]
async fn a_period_close_writes_one_period_closed_with_its_first_standings() {
    let env = env().await;
    let column = |name: &str, order| Column {
        name: name.into(),
        order,
        min: -1_000_000,
        max: 1_000_000,
    };
    definition::declare(
        &env.db,
        &board("gp"),
        &Declaration {
            operator: Some(Operator::Best),
            reset: Some(Reset::Manual),
            columns: Some(vec![
                column("laps", Sort::Descending),
                column("time_ms", Sort::Ascending),
                column("bonus", Sort::Descending),
            ]),
            ..Declaration::default()
        },
    )
    .await
    .expect("declare");
    // 12 entries: the event carries the first 10.
    let mut period = String::new();
    for i in 0..12 {
        post(
            &env,
            "gp",
            &format!("u{i:02}"),
            &format!("[{}, {}, {}]", i % 4, 9000 - i, -i),
        )
        .await;
    }
    if let Some(p) = periods::current(&env.db, &board("gp"))
        .await
        .expect("periods")
    {
        period = p.current;
    }
    assert_eq!(
        periods::close(&env.db, &board("gp"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::NotEnded
    );
    next_period(&env, "gp", &period).await;
    assert_eq!(
        periods::close(&env.db, &board("gp"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::Pending
    );
    assert!(
        logged(&env, Kind::PeriodClosed).await.is_empty(),
        "a close that did not close wrote an event"
    );
    env.mark_projected().await;
    let closed = match periods::close(&env.db, &board("gp"), &period)
        .await
        .expect("close")
    {
        periods::CloseOutcome::Closed(c) => c,
        other => panic!("expected a close, got {other:?}"),
    };
    // Closed again: nothing written.
    assert!(matches!(
        periods::close(&env.db, &board("gp"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::AlreadyClosed(_)
    ));
    let events = logged(&env, Kind::PeriodClosed).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(
        e.id,
        derived(&env, &format!("period.closed:gp:{period}")).await
    );
    assert_eq!(
        (e.board.as_str(), e.period.as_deref(), e.cohort, &e.user_id),
        ("gp", Some(period.as_str()), None, &None)
    );
    let standings = periods::standings(&env.db, &board("gp"), &period, 0, 10)
        .await
        .expect("standings");
    let first: Vec<Value> = standings
        .iter()
        .map(|s| {
            json!({"position": s.position, "rank": s.rank, "user_id": s.user_id,
                   "score": s.score, "scores": s.scores})
        })
        .collect();
    assert_eq!(first.len(), 10);
    assert_eq!(
        e.data,
        json!({"period": period, "closed_at": closed.closed_at, "entries": 12,
               "digest": closed.digest, "standings": first}),
        "the event's standings are the standings route's, every column as it reads them"
    );
}

/// A one-off league of cohorts of 2 over `name`, open from the next whole second until
/// `secs` later: bronze (its first moves up) and silver (its last moves down, its own prizes).
async fn declare_league(env: &Env, name: &str, secs: i64) {
    definition::declare(
        &env.db,
        &board(name),
        &Declaration {
            operator: Some(Operator::Best),
            reset: Some(Reset::Manual),
            ..Declaration::default()
        },
    )
    .await
    .expect("declare the board");
    let ends = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
        + chrono::Duration::seconds(secs);
    let prize = |reward: &str, amount| Prize {
        from: 1,
        to: 1,
        reward: reward.into(),
        amount,
    };
    competition::declare(
        &env.db,
        &Definitions::new(Duration::ZERO),
        &board(name),
        &competition::Declaration {
            ends_at: Some(ends.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            cohort_size: Some(2),
            tiers: vec![
                Tier {
                    name: "bronze".into(),
                    promote: 1,
                    relegate: 0,
                    prizes: None,
                },
                Tier {
                    name: "silver".into(),
                    promote: 0,
                    relegate: 1,
                    prizes: Some(vec![prize("silver-cup", 1)]),
                },
            ],
            prizes: vec![prize("cup", 10)],
            ..competition::Declaration::default()
        },
    )
    .await
    .expect("declare the league");
}

#[tokio::test]
async fn a_run_close_writes_one_competition_closed_and_one_period_closed_per_cohort() {
    let env = env().await;
    // Ten seconds: four entries and four scores must land inside the window even on a
    // loaded machine (four seconds was once too few under CI).
    declare_league(&env, "lg", 10).await;
    let user = |u: &str| UserId::parse(u).expect("user");
    // The window opens at the next whole second.
    let entered = std::sync::Mutex::new(None);
    wait_until(Duration::from_secs(5), || async {
        let first = competition::enter(&env.db, &board("lg"), &user("ann"), None).await;
        let open = first.is_ok();
        *entered.lock().expect("lock") = first.ok();
        open
    })
    .await
    .expect("the league opens");
    let run = entered
        .into_inner()
        .expect("lock")
        .expect("entered")
        .entry
        .run;
    for u in ["bob", "cat", "dan"] {
        competition::enter(&env.db, &board("lg"), &user(u), None)
            .await
            .expect("enter");
    }
    for (u, points) in [("ann", 10), ("bob", 5), ("cat", 3), ("dan", 8)] {
        post(&env, "lg", u, &points.to_string()).await;
    }
    // Until the window ends the run is open; then its close waits for the projection.
    assert_eq!(
        competition::close(&env.db, &board("lg"), &run)
            .await
            .expect("close"),
        CloseOutcome::NotEnded
    );
    wait_until(Duration::from_secs(20), || async {
        competition::close(&env.db, &board("lg"), &run)
            .await
            .expect("close")
            != CloseOutcome::NotEnded
    })
    .await
    .expect("the run ends");
    assert!(logged(&env, Kind::CompetitionClosed).await.is_empty());
    env.mark_projected().await;
    let closed = match competition::close(&env.db, &board("lg"), &run)
        .await
        .expect("close")
    {
        CloseOutcome::Closed(c) => c,
        other => panic!("expected a close, got {other:?}"),
    };
    assert!(matches!(
        competition::close(&env.db, &board("lg"), &run)
            .await
            .expect("close"),
        CloseOutcome::AlreadyClosed(_)
    ));

    let runs = logged(&env, Kind::CompetitionClosed).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    let e = &runs[0];
    assert_eq!(
        e.id,
        derived(&env, &format!("competition.closed:lg:{run}")).await
    );
    assert_eq!(
        (e.board.as_str(), e.period.as_deref()),
        ("lg", Some(run.as_str()))
    );
    let d = &e.data;
    assert_eq!(
        (&d["run"], &d["closed_at"], &d["digest"], &d["entries"]),
        (
            &json!(run),
            &json!(closed.closed_at),
            &json!(closed.digest),
            &json!(4)
        ),
        "{d}"
    );
    assert_eq!(
        (&d["boards_total"], &d["moves_total"]),
        (&json!(2), &json!(2)),
        "{d}"
    );
    // Cohort 1 (ann 10, bob 5), cohort 2 (cat 3, dan 8), all bronze: each first wins the
    // bronze prize (the competition's table) and moves up.
    let placed = |b: &Value| -> Vec<(String, i64, Value)> {
        b["standings"]
            .as_array()
            .expect("standings")
            .iter()
            .map(|s| {
                let user = s["user_id"].as_str().expect("user").to_owned();
                (
                    user,
                    s["rank"].as_i64().expect("rank"),
                    s["prize"]["reward"].clone(),
                )
            })
            .collect()
    };
    let boards = d["boards"].as_array().expect("boards");
    assert_eq!(boards.len(), 2, "{d}");
    assert_eq!(
        (&boards[0]["cohort"], &boards[0]["tier"]),
        (&json!(1), &json!(0))
    );
    assert_eq!(
        placed(&boards[0]),
        vec![
            ("ann".into(), 1, json!("cup")),
            ("bob".into(), 2, Value::Null)
        ]
    );
    assert_eq!(
        placed(&boards[1]),
        vec![
            ("dan".into(), 1, json!("cup")),
            ("cat".into(), 2, Value::Null)
        ]
    );
    assert_eq!(
        d["moves"],
        json!([
            {"user_id": "ann", "cohort": 1, "position": 1, "from_tier": 0, "to_tier": 1},
            {"user_id": "dan", "cohort": 2, "position": 1, "from_tier": 0, "to_tier": 1}
        ])
    );
    // One period.closed per cohort the run froze, each naming its cohort.
    let frozen = logged(&env, Kind::PeriodClosed).await;
    let cohorts: Vec<(Option<&str>, Option<u32>, Uuid)> = frozen
        .iter()
        .map(|e| (e.period.as_deref(), e.cohort, e.id))
        .collect();
    assert_eq!(
        cohorts,
        vec![
            (
                Some(run.as_str()),
                Some(1),
                derived(&env, &format!("period.closed:lg:{run}~000001")).await
            ),
            (
                Some(run.as_str()),
                Some(2),
                derived(&env, &format!("period.closed:lg:{run}~000002")).await
            )
        ]
    );
    assert_eq!(frozen[1].data["cohort"], json!(2));
    assert_eq!(frozen[1].data["standings"][0]["user_id"], json!("dan"));
}
