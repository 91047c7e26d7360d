//! Tournaments (issue 39): a one-off competition over a board reset by hand, its window (its
//! board's resets), its cap decided under concurrent entries, entry required for scores, the
//! listing by state and category, and the close of its run into final results. Cohorts and
//! leagues: `leagues.rs`. The router in process, on a database and a Redis namespace of its own.

use axum::http::StatusCode;
use ledgerboard_testkit::TEST_TOKEN;
use serde_json::{Value, json};

use crate::players::{Players, SECRET, claims, code, mint};

pub(crate) fn at(offset_s: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs() as i64;
    chrono::DateTime::from_timestamp(now + offset_s, 0)
        .expect("a time in range")
        .to_rfc3339()
}

impl Players {
    pub(crate) async fn enter(
        &self,
        token: &str,
        competition: &str,
        user: &str,
    ) -> (StatusCode, Value) {
        self.request(
            token,
            "POST",
            &format!("/v1/competitions/{competition}/entries"),
            Some(json!({ "user_id": user })),
        )
        .await
    }

    pub(crate) async fn declare_competition(&self, id: &str, body: Value) -> (StatusCode, Value) {
        self.request(
            TEST_TOKEN,
            "PUT",
            &format!("/v1/competitions/{id}"),
            Some(body),
        )
        .await
    }
}

#[tokio::test]
async fn a_tournament_takes_entries_up_to_its_cap_and_scores_from_entrants_in_its_window() {
    let p = Players::new(|_| {}).await;
    for board in ["cup", "later", "past", "season", "early"] {
        p.define(
            board,
            json!({"operator": "best", "write_policy": "player", "reset": "manual"}),
        )
        .await;
    }
    p.define("daily", json!({"operator": "best", "reset": "daily"}))
        .await;
    p.define("forever", json!({"operator": "best"})).await;
    let prizes = json!([{"from": 1, "to": 1, "reward": "gold", "amount": 100},
                        {"from": 2, "to": 3, "reward": "silver", "amount": 10}]);
    // No starts_at: from the next whole second.
    let cup_ends = at(3600);
    let cup = json!({"ends_at": cup_ends, "max_size": 10, "category": "weekend",
                     "prizes": prizes});
    let (status, body) = p.declare_competition("cup", cup.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["entrants"], json!(0), "{body}");
    let (status, _) = p.declare_competition("cup", cup).await;
    assert_eq!(status, StatusCode::OK);
    for (id, body, expected) in [
        (
            "later",
            json!({"starts_at": at(3600), "ends_at": at(7200)}),
            StatusCode::CREATED,
        ),
        // Two seconds long: ended when the listing is read.
        ("past", json!({"ends_at": at(2)}), StatusCode::CREATED),
    ] {
        let (status, answer) = p.declare_competition(id, body).await;
        assert_eq!(status, expected, "{id}: {answer}");
    }
    // Refused declarations, each with its own code.
    for (id, body, expected) in [
        (
            "season",
            json!({"starts_at": at(60), "ends_at": at(30)}),
            "invalid_window",
        ),
        (
            "early",
            json!({"starts_at": at(-60), "ends_at": at(60)}),
            "invalid_window",
        ),
        (
            "season",
            json!({"starts_at": "2026-12-07T18:00:00.5Z", "ends_at": at(60)}),
            "invalid_window",
        ),
        (
            "season",
            json!({"ends_at": at(60),
                          "prizes": [{"from": 1, "to": 3, "reward": "a"},
                                     {"from": 3, "to": 4, "reward": "b"}]}),
            "invalid_prizes",
        ),
        (
            "season",
            json!({"ends_at": at(60), "tiers": [{"name": "bronze"}]}),
            "invalid_tiers",
        ),
        (
            "season",
            json!({"ends_at": at(60), "cohort_size": 5, "entry_required": false}),
            "invalid_cohort_size",
        ),
        ("nowhere", json!({"ends_at": at(60)}), "competition_board"),
        // A window on a board with a schedule, none on a board reset by hand, any on a board
        // that never resets.
        ("daily", json!({"ends_at": at(60)}), "competition_board"),
        ("season", json!({}), "competition_board"),
        ("forever", json!({"ends_at": at(60)}), "competition_board"),
    ] {
        let (status, answer) = p.declare_competition(id, body).await;
        assert_eq!(
            (status, code(&answer)),
            (StatusCode::UNPROCESSABLE_ENTITY, expected),
            "{id}: {answer}"
        );
    }
    let open = |id: &'static str| {
        let p = &p;
        async move {
            let (_, c) = p.get(TEST_TOKEN, &format!("/v1/competitions/{id}")).await;
            c["state"] == json!("open")
        }
    };
    assert!(
        ledgerboard_testkit::wait_until(std::time::Duration::from_secs(5), || open("cup"))
            .await
            .is_some(),
        "cup never opened"
    );

    // 30 players enter at once: exactly 10 get a seat, each once.
    let entries = (0..30).map(|i| {
        let p = &p;
        async move { p.enter(TEST_TOKEN, "cup", &format!("player-{i:02}")).await }
    });
    let answers = futures_util::future::join_all(entries).await;
    let entered: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .map(|(_, b)| b)
        .collect();
    let full = answers
        .iter()
        .filter(|(s, b)| *s == StatusCode::CONFLICT && code(b) == "competition_full")
        .count();
    assert_eq!((entered.len(), full), (10, 20), "{answers:?}");
    let mut seats: Vec<i64> = entered.iter().filter_map(|b| b["seat"].as_i64()).collect();
    seats.sort_unstable();
    assert_eq!(seats, (1..=10).collect::<Vec<_>>());
    let client = p.env.db.client().await;
    let rows: i64 = client
        .query_one(
            "SELECT count(*) FROM competition_entries WHERE competition_id = 'cup'",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(rows, 10);
    // An entrant enters again: the same seat.
    let first = entered[0]["user_id"].as_str().expect("user").to_owned();
    let (status, again) = p.enter(TEST_TOKEN, "cup", &first).await;
    assert_eq!(
        (status, &again["seat"]),
        (StatusCode::OK, &entered[0]["seat"])
    );
    // A player enters itself with its own token.
    let outsider = (0..30)
        .map(|i| format!("player-{i:02}"))
        .find(|u| !entered.iter().any(|b| b["user_id"] == json!(u)))
        .expect("an outsider");
    let token = mint(
        "k1",
        SECRET,
        &claims(
            &first,
            &["cup"],
            ledgerboard_core::auth::player::now_s() + 600,
        ),
    );
    let (status, body) = p
        .request(
            &token,
            "POST",
            "/v1/competitions/cup/entries",
            Some(json!({})),
        )
        .await;
    assert_eq!(
        (status, &body["duplicate"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );

    let ended = || {
        let p = &p;
        async move {
            let (_, c) = p.get(TEST_TOKEN, "/v1/competitions/past").await;
            c["state"] == json!("ended")
        }
    };
    assert!(
        ledgerboard_testkit::wait_until(std::time::Duration::from_secs(10), ended)
            .await
            .is_some(),
        "the two-second competition never ended"
    );
    // Scores: an entrant's is taken, an outsider's refused; before the start and after the end,
    // nobody's. Nothing refused is written.
    let score = |user: &str| json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": user, "score": 7});
    let (status, body) = p.post_json("cup", score(&first)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for (board, user, status, expected) in [
        (
            "cup",
            outsider.as_str(),
            StatusCode::FORBIDDEN,
            "competition_not_entered",
        ),
        (
            "later",
            first.as_str(),
            StatusCode::CONFLICT,
            "competition_not_started",
        ),
        (
            "past",
            first.as_str(),
            StatusCode::CONFLICT,
            "competition_ended",
        ),
    ] {
        let (got, body) = p.post_json(board, score(user)).await;
        assert_eq!(
            (got, code(&body)),
            (status, expected),
            "{board} {user}: {body}"
        );
    }
    assert_eq!(p.written().await, (1, 1, 1), "a refused score was written");
    for (id, expected) in [
        ("later", "competition_not_started"),
        ("past", "competition_ended"),
    ] {
        let (status, body) = p.enter(TEST_TOKEN, id, &first).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::CONFLICT, expected),
            "{body}"
        );
    }

    // The listing: by state, by category, a page at a time.
    let ids = |page: &Value| -> Vec<String> {
        page["competitions"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter_map(|c| c["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (query, expected) in [
        ("?state=open", vec!["cup"]),
        ("?state=upcoming", vec!["later"]),
        ("?state=ended", vec!["past"]),
        ("?category=weekend", vec!["cup"]),
        ("", vec!["cup", "later", "past"]),
    ] {
        let expected: Vec<String> = expected.into_iter().map(str::to_owned).collect();
        let (status, page) = p.get(TEST_TOKEN, &format!("/v1/competitions{query}")).await;
        assert_eq!(
            (status, ids(&page)),
            (StatusCode::OK, expected),
            "{query}: {page}"
        );
    }
    let (_, page) = p.get(TEST_TOKEN, "/v1/competitions?limit=2").await;
    assert_eq!(
        (ids(&page), &page["next"]),
        (vec!["cup".to_owned(), "later".to_owned()], &json!("later"))
    );
    let (_, page) = p
        .get(TEST_TOKEN, "/v1/competitions?limit=2&after=later")
        .await;
    assert_eq!(ids(&page), vec!["past"]);
    let (_, cup) = p.get(TEST_TOKEN, "/v1/competitions/cup").await;
    assert_eq!(
        (&cup["entrants"], &cup["prizes"][1]["reward"]),
        (&json!(10), &json!("silver")),
        "{cup}"
    );
    // Results from PostgreSQL, each rank with its prize; not final while it is open.
    for (i, points) in [(1, 9), (2, 5)] {
        let user = entered[i]["user_id"].as_str().expect("user");
        let body =
            json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": user, "score": points});
        let (status, answer) = p.post_json("cup", body).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let (status, results) = p.get(TEST_TOKEN, "/v1/competitions/cup/results").await;
    assert_eq!(status, StatusCode::OK, "{results}");
    let placed: Vec<(i64, i64, Value)> = results["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["rank"].as_i64().unwrap_or(0),
                e["score"].as_i64().unwrap_or(0),
                e["prize"]["reward"].clone(),
            )
        })
        .collect();
    assert_eq!(
        placed,
        vec![
            (1, 9, json!("gold")),
            (2, 7, json!("silver")),
            (3, 5, json!("silver"))
        ],
        "{results}"
    );
    assert_eq!(
        (&results["final"], &results["total"]),
        (&json!(false), &json!(3))
    );
    // The ended run is not final until it is closed; closed (here by an admin, else by the
    // reconciler), its results are the frozen ones: nobody scored.
    let (_, past) = p.get(TEST_TOKEN, "/v1/competitions/past/results").await;
    assert_eq!(past["final"], json!(false), "{past}");
    let run = past["run"].as_str().expect("the run").to_owned();
    let (status, closed) = p
        .request(
            TEST_TOKEN,
            "POST",
            &format!("/v1/competitions/past/runs/{run}/close"),
            None,
        )
        .await;
    assert_eq!(
        (status, &closed["outcome"], &closed["run"]["boards"]),
        (StatusCode::OK, &json!("closed"), &json!(1)),
        "{closed}"
    );
    let (_, past) = p.get(TEST_TOKEN, "/v1/competitions/past/results").await;
    assert_eq!(
        (&past["final"], &past["entries"]),
        (&json!(true), &json!([])),
        "{past}"
    );
    // The open run cannot close.
    let cup_run = results["run"].as_str().expect("the run");
    let (_, open_close) = p
        .request(
            TEST_TOKEN,
            "POST",
            &format!("/v1/competitions/cup/runs/{cup_run}/close"),
            None,
        )
        .await;
    assert_eq!(open_close["outcome"], json!("not_ended"), "{open_close}");

    // The console lists it with its entrants of its cap and its prizes.
    let (status, page) = crate::console::page(&p.app, "/console/competitions").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(
        page.contains(r#"<tr data-id="cup">"#)
            && page.contains("10 of 10")
            && page.contains("rank 1: gold x100; ranks 2-3: silver x10"),
        "{page}"
    );
    // The cap may not go below the entrants.
    let (status, body) = p
        .declare_competition("cup", json!({"ends_at": cup_ends, "max_size": 5}))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "competition_below_entrants"),
        "{body}"
    );
    // Nor its window move once it has entrants.
    let (status, body) = p
        .declare_competition("cup", json!({"ends_at": at(7200)}))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "competition_started"),
        "{body}"
    );
}
