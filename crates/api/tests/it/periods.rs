//! Periods through the api (issue 22, part 1): a season board that resets when an admin asks
//! posts to its current period, a reset opens the next one, and `period=current`, `previous`
//! and a period id read the same from PostgreSQL (`strong`) and the projection (`eventual`),
//! each answer naming its period. Where a period starts by the schedule is core's test
//! (`core/tests/it/periods/schedule.rs`: daily, weekly, monthly in a zone, every n seconds).

use crate::common;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{TestEnv, app_with, both, get, seal, send};
use ledgerboard_core::config::Millis;
use ledgerboard_projector::Projector;
use ledgerboard_testkit::wait_until;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn admin(request: axum::http::request::Builder) -> axum::http::request::Builder {
    request
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", ledgerboard_testkit::TEST_TOKEN),
        )
}

async fn put(app: &Router, board: &str, body: Value) -> (StatusCode, Value) {
    let request = admin(Request::put(format!("/v1/boards/{board}")))
        .body(Body::from(body.to_string()))
        .expect("request");
    send(app, request).await
}

async fn reset(app: &Router, board: &str) -> (StatusCode, Value) {
    let request = admin(Request::post(format!("/v1/boards/{board}/reset")))
        .body(Body::empty())
        .expect("request");
    send(app, request).await
}

async fn post(app: &Router, board: &str, event: &str, user: &str, delta: i64) -> Value {
    let body = json!({"event_id": event, "user_id": user, "delta": delta});
    let (status, answer) = send(app, common::command(board, body.to_string())).await;
    assert!(status.is_success(), "{status} {answer}");
    answer
}

/// (user, rank, score) of each entry.
fn lines(page: &Value) -> Vec<(String, u64, i64)> {
    page["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {page}"))
        .iter()
        .map(|e| {
            (
                e["user_id"].as_str().expect("user").to_owned(),
                e["rank"].as_u64().expect("rank"),
                e["score"].as_i64().expect("score"),
            )
        })
        .collect()
}

fn entries(list: &[(&str, u64, i64)]) -> Vec<(String, u64, i64)> {
    list.iter()
        .map(|(u, r, s)| ((*u).to_owned(), *r, *s))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_season_resets_by_hand_and_each_period_reads_the_same_from_both_sources() {
    let env = TestEnv::new(|s| {
        s.projector.poll_interval_ms = Millis::of(20);
        s.api.definition_cache_ms = Millis::of(50);
    })
    .await;
    let app = app_with(&env.settings);
    let (status, declared) = put(
        &app,
        "season",
        json!({"operator": "add", "reset": "manual"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{declared}");
    assert_eq!(
        (&declared["reset"], &declared["time_zone"]),
        (&json!("manual"), &json!("UTC"))
    );

    let first_event = uuid::Uuid::new_v4().to_string();
    let alice = post(&app, "season", &first_event, "alice", 30).await;
    let p1 = alice["period"]
        .as_str()
        .expect("the command names its period")
        .to_owned();
    assert_eq!(alice["board"], "season", "{alice}");
    post(&app, "season", &uuid::Uuid::new_v4().to_string(), "bob", 10).await;
    // A period is a board of its own: the reconciler's rebuild seals it like any other.
    seal(&env, &format!("season~{p1}")).await;
    let cancel = CancellationToken::new();
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let running = tokio::spawn(projector.run(cancel.clone()));
    post(
        &app,
        "season",
        &uuid::Uuid::new_v4().to_string(),
        "carol",
        20,
    )
    .await;
    assert!(env.wait_drained(Duration::from_secs(10)).await);

    let top = both(&app, "/v1/boards/season/top").await;
    assert_eq!(top["period"], json!(p1), "{top}");
    assert_eq!(
        lines(&top),
        entries(&[("alice", 1, 30), ("carol", 2, 20), ("bob", 3, 10)])
    );

    // A reset opens the next period at the next whole second of the database clock.
    let (status, opened) = reset(&app, "season").await;
    assert_eq!(status, StatusCode::OK, "{opened}");
    let p2 = opened["period"].as_str().expect("period").to_owned();
    assert!(p2 > p1 && opened["opened"] == json!(true), "{opened}");
    let now = std::cell::RefCell::new(Value::Null);
    let current = wait_until(Duration::from_secs(5), || async {
        let (_, page) = get(&app, "/v1/boards/season/top?consistency=strong").await;
        let current = page["period"] == json!(p2);
        *now.borrow_mut() = page;
        current
    })
    .await;
    let now = now.into_inner();
    assert!(current.is_some(), "period {p2} never became current: {now}");
    assert_eq!(now["total"], json!(0), "a new period starts empty: {now}");
    let bob = post(&app, "season", &uuid::Uuid::new_v4().to_string(), "bob", 5).await;
    assert_eq!(bob["period"], json!(p2), "{bob}");
    assert_eq!(
        (&bob["score"], &bob["version"]),
        (&json!(5), &json!(1)),
        "bob starts over: {bob}"
    );
    // A repeat of a command of the first period still answers as it did.
    let again = post(&app, "season", &first_event, "alice", 30).await;
    assert_eq!(
        (&again["duplicate"], &again["period"]),
        (&json!(true), &json!(p1)),
        "{again}"
    );
    seal(&env, &format!("season~{p2}")).await;
    assert!(env.wait_drained(Duration::from_secs(10)).await);

    let current = both(&app, "/v1/boards/season/top").await;
    assert_eq!(current["period"], json!(p2));
    assert_eq!(lines(&current), entries(&[("bob", 1, 5)]));
    let previous = both(&app, "/v1/boards/season/top?period=previous").await;
    assert_eq!(previous["period"], json!(p1));
    assert_eq!(
        lines(&previous),
        lines(&top),
        "the first period stands as it closed"
    );
    let named = both(&app, &format!("/v1/boards/season/top?period={p1}")).await;
    assert_eq!(lines(&named), lines(&top));
    let member = both(
        &app,
        "/v1/boards/season/users?ids=alice,bob&period=previous",
    )
    .await;
    assert_eq!(lines(&member), entries(&[("alice", 1, 30), ("bob", 3, 10)]));
    let (status, me) = get(&app, "/v1/boards/season/users/bob?consistency=strong").await;
    assert_eq!(
        (status, &me["score"], &me["period"]),
        (StatusCode::OK, &json!(5), &json!(p2))
    );

    // The reconciler closes the ended period (after its passes): its standings are frozen,
    // read from PostgreSQL only, with the digest a payout names; the open period has none.
    let closes = ledgerboard_reconciler::periods::close_due(&env.database())
        .await
        .expect("close");
    assert_eq!(closes.closed, 1, "{closes:?}");
    let (status, frozen) = get(&app, &format!("/v1/boards/season/periods/{p1}/standings")).await;
    assert_eq!(status, StatusCode::OK, "{frozen}");
    assert_eq!(
        (&frozen["entries"], &frozen["period"]),
        (&json!(3), &json!(p1)),
        "{frozen}"
    );
    assert_eq!(
        frozen["digest"].as_str().map(str::len),
        Some(64),
        "{frozen}"
    );
    let rows: Vec<(String, i64, i64)> = frozen["standings"]
        .as_array()
        .expect("standings")
        .iter()
        .map(|r| {
            (
                r["user_id"].as_str().expect("user").to_owned(),
                r["rank"].as_i64().expect("rank"),
                r["score"].as_i64().expect("score"),
            )
        })
        .collect();
    let want: Vec<(String, i64, i64)> = lines(&top)
        .into_iter()
        .map(|(u, r, s)| (u, r as i64, s))
        .collect();
    assert_eq!(
        rows, want,
        "the frozen standings are the period's last read"
    );
    let (status, page) = get(
        &app,
        &format!("/v1/boards/season/periods/{p1}/standings?limit=2"),
    )
    .await;
    assert_eq!(
        (status, &page["next"]),
        (StatusCode::OK, &json!(2)),
        "{page}"
    );
    let (status, page) = get(
        &app,
        &format!("/v1/boards/season/periods/{p1}/standings?after=2"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["standings"][0]["user_id"], "bob", "{page}");
    let (status, open) = get(&app, &format!("/v1/boards/season/periods/{p2}/standings")).await;
    assert_eq!(
        (status, open["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("period_not_closed"))
    );
    let again = ledgerboard_reconciler::periods::close_due(&env.database())
        .await
        .expect("close");
    assert_eq!(again.closed, 0, "a closed period is not closed again");

    // The console's board page shows the periods and the previous one's frozen standings with
    // their digest check, which holds; once a frozen row is edited, the check says so.
    let console = async || {
        let request = Request::get("/console/boards/season")
            .header(
                header::COOKIE,
                format!("lb_console={}", ledgerboard_testkit::TEST_TOKEN),
            )
            .body(Body::empty())
            .expect("request");
        let (status, page) = common::send_text(&app, request).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        page
    };
    let page = console().await;
    assert!(
        page.contains(&format!("Frozen standings of {p1}")),
        "{page}"
    );
    assert!(
        page.contains(
            r#"<span id="digest-check" class="ok">holds: digest matches, 3 rows for 3 entries"#
        ),
        "{page}"
    );
    env.db
        .client()
        .await
        .execute(
            "UPDATE period_standings SET score = score + 1 WHERE board_id = 'season' AND position = 1",
            &[],
        )
        .await
        .expect("edit a frozen row");
    let page = console().await;
    assert!(
        page.contains(
            r#"<span id="digest-check" class="bad">does not hold: digest does not match"#
        ),
        "{page}"
    );
    // The api's verification says the same, from the same type (admin scope).
    let request = Request::get(format!("/v1/boards/season/periods/{p1}/verification"))
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", ledgerboard_testkit::TEST_TOKEN),
        )
        .body(Body::empty())
        .expect("request");
    let (status, v) = common::send(&app, request).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["outcome"], &v["holds"], &v["verification"]["disagree"]),
        (&json!("does_not_hold"), &json!(false), &json!(1)),
        "{v}"
    );
    env.db
        .client()
        .await
        .execute(
            "UPDATE period_standings SET score = score - 1 WHERE board_id = 'season' AND position = 1",
            &[],
        )
        .await
        .expect("undo the edit");

    // Past the retention (none here), the reconciler archives the closed period: reads of it go
    // to PostgreSQL, and once the grace (none here) has passed its keys are dropped. Checked
    // before any pass or rebuild could write them back.
    let store = env.store();
    let old_board =
        ledgerboard_core::model::BoardId::parse_stored(&format!("season~{p1}")).expect("period");
    let existing = async || -> i64 {
        let mut conn = store.connection().await.expect("redis");
        redis::cmd("EXISTS")
            .arg(store.keys().board_keys(&old_board))
            .query_async(&mut conn)
            .await
            .expect("exists")
    };
    assert!(
        existing().await >= 3,
        "the closed period's projection is there"
    );
    let archives = ledgerboard_reconciler::periods::archive_due(
        &env.database(),
        &store,
        Duration::ZERO,
        Duration::ZERO,
    )
    .await
    .expect("archive");
    assert_eq!(
        (archives.archived, archives.dropped),
        (1, 1),
        "{archives:?}"
    );
    assert_eq!(existing().await, 0, "its keys are dropped");
    // The api learns of it within its period cache's time (50 ms here).
    wait_until(Duration::from_secs(5), || async {
        let (_, page) = get(
            &app,
            &format!("/v1/boards/season/top?period={p1}&consistency=eventual"),
        )
        .await;
        page["freshness"]["reason"] == "period_archived"
    })
    .await
    .expect("the api learns of the archive");
    for consistency in ["eventual", "bounded"] {
        let (status, page) = get(
            &app,
            &format!("/v1/boards/season/top?period={p1}&consistency={consistency}"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(
            (
                page["freshness"]["source"].as_str(),
                page["freshness"]["reason"].as_str()
            ),
            (Some("database"), Some("period_archived")),
            "{consistency}: {page}"
        );
        assert_eq!(lines(&page), lines(&top), "{consistency}");
    }
    let (_, friends) = get(
        &app,
        "/v1/boards/season/users?ids=alice,bob&period=previous&consistency=eventual",
    )
    .await;
    assert_eq!(
        friends["freshness"]["reason"], "period_archived",
        "{friends}"
    );
    assert_eq!(
        lines(&friends),
        entries(&[("alice", 1, 30), ("bob", 3, 10)])
    );
    let (_, alice) = get(&app, "/v1/boards/season/users/alice?period=previous").await;
    assert_eq!(
        (&alice["score"], &alice["freshness"]["reason"]),
        (&json!(30), &json!("period_archived")),
        "{alice}"
    );
    let (_, current) = get(&app, "/v1/boards/season/top").await;
    assert_eq!(
        current["freshness"]["source"], "projection",
        "the open period still reads Redis: {current}"
    );
    // Nothing asked for a rebuild of it, and the reconciler's walk passes it by.
    let mut conn = store.connection().await.expect("redis");
    let requested: bool = redis::cmd("SISMEMBER")
        .arg(store.keys().rebuild_requests())
        .arg(old_board.as_str())
        .query_async(&mut conn)
        .await
        .expect("sismember");
    assert!(
        !requested,
        "a read of an archived period asked for a rebuild"
    );
    let (walked, _) = ledgerboard_core::db::source::boards_page(&env.database(), "", None, 100)
        .await
        .expect("boards");
    assert!(!walked.contains(&old_board), "{walked:?}");
    assert!(
        walked.iter().any(|b| b.as_str() == format!("season~{p2}")),
        "{walked:?}"
    );
    let again = ledgerboard_reconciler::periods::archive_due(
        &env.database(),
        &store,
        Duration::ZERO,
        Duration::ZERO,
    )
    .await
    .expect("archive");
    assert_eq!((again.archived, again.dropped), (0, 0), "archived once");

    // Issue 35: the archived period's keys stay dropped. A rebuild asked by hand is refused, and
    // a ban and an unban of a user with an entry on it write no row for it (projected, such a
    // row wrote its keys back, and nothing dropped them again).
    let refused = ledgerboard_reconciler::rebuild::rebuild(
        &env.database(),
        &store,
        &env.settings,
        &old_board,
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::No,
    )
    .await;
    assert!(
        matches!(
            refused,
            Err(ledgerboard_reconciler::rebuild::RebuildError::Archived(_))
        ),
        "{refused:?}"
    );
    assert_eq!(existing().await, 0, "the refused rebuild wrote no key");
    let rows_of_old = async || -> i64 {
        env.db
            .client()
            .await
            .query_one(
                "SELECT count(*) FROM leaderboard_outbox WHERE board_id = $1",
                &[&old_board.as_str()],
            )
            .await
            .expect("rows")
            .get(0)
    };
    let rows_before = rows_of_old().await;
    for action in ["ban", "unban"] {
        let (status, done) = send(
            &app,
            admin(Request::post("/v1/moderation"))
                .body(Body::from(
                    json!({"action_id": uuid::Uuid::new_v4().to_string(), "action": action,
                           "user_id": "alice", "reason": "test"})
                    .to_string(),
                ))
                .expect("request"),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{done}");
        assert_eq!(
            rows_of_old().await,
            rows_before,
            "{action} wrote a row for the archived period: {done}"
        );
        assert!(env.wait_drained(Duration::from_secs(10)).await);
        assert_eq!(
            existing().await,
            0,
            "{action} wrote the archived period's keys back"
        );
    }

    // A removal names the period the entry is removed from (the board holds none itself).
    let removal = |period: &str| {
        admin(Request::post("/v1/moderation"))
            .body(Body::from(
                json!({"action_id": uuid::Uuid::new_v4().to_string(), "action": "remove",
                       "user_id": "bob", "board": "season", "period": period,
                       "reason": "test"})
                .to_string(),
            ))
            .expect("request")
    };
    let (status, removed) = send(&app, removal(&p2)).await;
    assert_eq!(status, StatusCode::CREATED, "{removed}");
    assert_eq!(
        (&removed["result"]["entries"], &removed["result"]["boards"]),
        (&json!(1), &json!([format!("season~{p2}")])),
        "{removed}"
    );
    let (_, now) = get(&app, "/v1/boards/season/top?consistency=strong").await;
    assert_eq!(
        now["total"],
        json!(0),
        "bob removed from the open period: {now}"
    );
    let (status, bad) = send(&app, removal("last-week")).await;
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_period")),
        "{bad}"
    );

    // What cannot be asked.
    let (status, bad) = get(&app, "/v1/boards/season/top?period=last-week").await;
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_period"))
    );
    post(&app, "plain", &uuid::Uuid::new_v4().to_string(), "ann", 1).await;
    let (status, plain) = get(&app, "/v1/boards/plain/top?consistency=strong").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        plain.get("period").is_none(),
        "a board that never resets names no period: {plain}"
    );
    let (status, bad) = get(&app, "/v1/boards/plain/top?period=previous").await;
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("board_never_resets"))
    );
    let (status, bad) = reset(&app, "plain").await;
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("board_never_resets"))
    );
    // The schedule of a board with entries does not change.
    let (status, bad) = put(
        &app,
        "season",
        json!({"operator": "add", "reset": "weekly"}),
    )
    .await;
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("board_has_entries")),
        "{bad}"
    );
    for never_fires in ["hourly", "0 0 30 2 *", "@weekly", "0 0 0 * * MON"] {
        let (status, bad) = put(
            &app,
            "other",
            json!({"operator": "add", "reset": never_fires}),
        )
        .await;
        assert_eq!(
            (status, bad["error"]["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_reset")),
            "{never_fires}: {bad}"
        );
    }
    // A cron schedule is declared, answered as sent (fields joined by one space), and its
    // current period ends at its next fire time.
    let (status, cron) = put(
        &app,
        "fridays",
        json!({"operator": "add", "reset": "0  18 * * FRI", "time_zone": "Europe/Paris"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{cron}");
    assert_eq!(cron["reset"], "0 18 * * FRI");
    let fridays = ledgerboard_core::board::periods::current(
        &env.database(),
        &ledgerboard_core::model::BoardId::parse("fridays").expect("board"),
    )
    .await
    .expect("periods")
    .expect("fridays resets");
    let ends_in = fridays
        .ends_in_ms
        .expect("a cron period ends at its next fire time");
    assert!(
        (0..=7 * 24 * 3600 * 1000).contains(&ends_in),
        "{ends_in} ms to the next Friday 18:00"
    );
    let (status, bad) = put(
        &app,
        "other",
        json!({"operator": "add", "reset": "daily", "time_zone": "Europe/Nowhere"}),
    )
    .await;
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_time_zone")),
        "{bad}"
    );

    cancel.cancel();
    running.await.expect("projector task");
}
