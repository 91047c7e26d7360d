//! Cohorts and leagues (issue 39): entries placed in cohorts exactly under concurrency (first
//! come, or by rating band), each cohort a board of its own read from its projection (sealed by
//! its first entry, before any read) or PostgreSQL alike; a league's runs closed in order, tiers
//! moved by each close, a player's history, and the chain of run digests verified, then
//! broken by a tampered frozen row. The router in process with a projector, on a database and a
//! Redis namespace of their own.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::StatusCode;
use ledgerboard_core::board::periods::Outcome;
use ledgerboard_core::config::Millis;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::{self, Seal};
use ledgerboard_projector::Projector;
use ledgerboard_testkit::{TEST_TOKEN, wait_until};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::competitions::at;
use crate::players::{Players, code};

/// A projector over the test's database and namespace, until the token is cancelled.
fn projector(p: &Players) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let projector = Projector::new(p.env.settings.clone(), p.env.database(), p.env.store());
    let running = tokio::spawn(projector.run(cancel.clone()));
    (cancel, running)
}

async fn score(p: &Players, board: &str, user: &str, points: i64) -> Value {
    let body = json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": user,
                      "score": points});
    let (status, answer) = p.post_json(board, body).await;
    assert_eq!(status, StatusCode::CREATED, "{user}: {answer}");
    answer
}

fn users(page: &Value) -> Vec<String> {
    page["entries"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter_map(|e| e["user_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub async fn wait_open(p: &Players, id: &str) {
    let open = || async move {
        let (_, c) = p.get(TEST_TOKEN, &format!("/v1/competitions/{id}")).await;
        c["state"] == json!("open")
    };
    assert!(
        wait_until(Duration::from_secs(5), open).await.is_some(),
        "{id} never opened"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cohorts_fill_exactly_rank_apart_and_read_the_same_from_their_sealed_projection() {
    let p = Players::new(|s| {
        s.projector.poll_interval_ms = Millis::of(20);
    })
    .await;
    for board in ["brawl", "rated"] {
        p.define(board, json!({"operator": "best", "reset": "manual"}))
            .await;
    }
    let (status, body) = p
        .declare_competition("brawl", json!({"ends_at": at(3600), "cohort_size": 3}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    wait_open(&p, "brawl").await;

    // Ten players enter at once: cohorts of 3, 3, 3 and 1, filled one at a time.
    let entries = (0..10).map(|i| {
        let p = &p;
        async move { p.enter(TEST_TOKEN, "brawl", &format!("p{i}")).await }
    });
    let answers = futures_util::future::join_all(entries).await;
    let mut cohorts: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut seats = Vec::new();
    for (status, body) in &answers {
        assert_eq!(*status, StatusCode::CREATED, "{body}");
        let cohort = body["cohort"].as_i64().expect("a cohort");
        let user = body["user_id"].as_str().expect("user").to_owned();
        cohorts.entry(cohort).or_default().push(user);
        seats.push(body["seat"].as_i64().expect("seat"));
    }
    seats.sort_unstable();
    assert_eq!(seats, (1..=10).collect::<Vec<_>>());
    let sizes: Vec<(i64, usize)> = cohorts.iter().map(|(c, u)| (*c, u.len())).collect();
    assert_eq!(sizes, vec![(1, 3), (2, 3), (3, 3), (4, 1)], "{answers:?}");
    let run = answers[0].1["run"].as_str().expect("the run").to_owned();
    // Each cohort's board was sealed empty by its first entry: whole before any read or score.
    for c in 1..=4 {
        let board = BoardId::parse("brawl")
            .expect("id")
            .in_cohort(&run, c)
            .expect("cohort");
        let seal = read::board_seal(&p.env.store(), &board)
            .await
            .expect("seal");
        assert_eq!(seal, Seal::Whole, "{board}");
    }
    // Entering again answers the same cohort.
    let first = &cohorts[&2][0];
    let (status, again) = p.enter(TEST_TOKEN, "brawl", first).await;
    assert_eq!(
        (status, &again["cohort"], &again["duplicate"]),
        (StatusCode::OK, &json!(2), &json!(true))
    );

    // Scores land in each player's cohort; every cohort ranks apart.
    let (cancel, running) = projector(&p);
    for (i, user) in cohorts.values().flatten().enumerate() {
        let answer = score(&p, "brawl", user, 100 + i as i64).await;
        let cohort = cohorts
            .iter()
            .find(|(_, u)| u.contains(user))
            .map(|(c, _)| *c)
            .expect("its cohort");
        assert_eq!(
            (&answer["period"], &answer["cohort"]),
            (&json!(run), &json!(cohort)),
            "{answer}"
        );
    }
    assert!(p.env.wait_drained(Duration::from_secs(10)).await);
    for (c, members) in &cohorts {
        let top = format!("/v1/boards/brawl/top?cohort={c}");
        let (_, projected) = p
            .get(TEST_TOKEN, &format!("{top}&consistency=eventual"))
            .await;
        let (_, bounded) = p.get(TEST_TOKEN, &top).await;
        let (_, strong) = p
            .get(TEST_TOKEN, &format!("{top}&consistency=strong"))
            .await;
        let mut expected = members.clone();
        expected.reverse();
        assert_eq!(users(&projected), expected, "{projected}");
        assert_eq!(users(&strong), expected, "{strong}");
        assert_eq!(
            projected["entries"], strong["entries"],
            "{projected} {strong}"
        );
        assert_eq!(
            (
                &bounded["freshness"]["source"],
                &bounded["cohort"],
                &bounded["period"]
            ),
            (&json!("projection"), &json!(c), &json!(run)),
            "{bounded}"
        );
        let me = &members[0];
        let (status, around) = p
            .get(
                TEST_TOKEN,
                &format!("/v1/boards/brawl/users/{me}/around?cohort={c}&rank_mode=dense"),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{around}");
        assert_eq!(users(&around), expected, "{around}");
    }
    // Another cohort's member is not on this cohort's board.
    let (status, _) = p
        .get(
            TEST_TOKEN,
            &format!("/v1/boards/brawl/users/{}?cohort=1", cohorts[&2][0]),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // No cohort 0, and no cohort on a board that never resets.
    let (status, _) = p.get(TEST_TOKEN, "/v1/boards/brawl/top?cohort=0").await;
    assert!(status.is_client_error(), "{status}");
    // A banned player leaves its cohort's ranks on both sources.
    let banned = cohorts[&1][2].clone();
    let ban = json!({"action_id": uuid::Uuid::new_v4().to_string(), "action": "ban",
                     "user_id": banned, "reason": "aimbot"});
    let (status, body) = p
        .request(TEST_TOKEN, "POST", "/v1/moderation", Some(ban))
        .await;
    assert!(status.is_success(), "{body}");
    assert!(p.env.wait_drained(Duration::from_secs(10)).await);
    for consistency in ["eventual", "strong"] {
        let (_, top) = p
            .get(
                TEST_TOKEN,
                &format!("/v1/boards/brawl/top?cohort=1&consistency={consistency}"),
            )
            .await;
        assert!(!users(&top).contains(&banned), "{consistency}: {top}");
        assert_eq!(users(&top).len(), 2, "{top}");
    }

    // By rating: within the band, the nearest open cohort; none fits: a new one; an entry
    // without a rating goes among the unrated.
    let (status, body) = p
        .declare_competition(
            "rated",
            json!({"ends_at": at(3600), "cohort_size": 2, "rating_band": 100}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    wait_open(&p, "rated").await;
    let mut placed = Vec::new();
    for (user, rating) in [
        ("r1", Some(1000)),
        ("r2", Some(1500)),
        ("r3", Some(1040)),
        ("r4", Some(1490)),
        ("r5", Some(1020)),
        ("r6", None),
    ] {
        let (status, body) = p
            .request(
                TEST_TOKEN,
                "POST",
                "/v1/competitions/rated/entries",
                Some(json!({"user_id": user, "rating": rating})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        placed.push((user, body["cohort"].as_i64().expect("cohort")));
    }
    // r5 is near cohort 1, which is full: it opens cohort 3.
    assert_eq!(
        placed,
        vec![
            ("r1", 1),
            ("r2", 2),
            ("r3", 1),
            ("r4", 2),
            ("r5", 3),
            ("r6", 4)
        ]
    );
    cancel.cancel();
    running.await.expect("projector task");
}

/// The league's run, once a run after `after` has begun less than 1.5 s ago (its period is 6 s).
async fn fresh_run(p: &Players, after: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let (_, c) = p.get(TEST_TOKEN, "/v1/competitions/ladder").await;
        let run = c["run"].as_str().unwrap_or_default().to_owned();
        if run.as_str() > after && now % 6_000 < 1_500 {
            return run;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no fresh run after {after:?}: {c}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_league_moves_players_between_tiers_run_after_run_under_a_chain_of_digests() {
    let p = Players::new(|s| {
        s.projector.poll_interval_ms = Millis::of(20);
        s.api.definition_cache_ms = Millis::of(50);
    })
    .await;
    p.define("ladder", json!({"operator": "best", "reset": "every 6s"}))
        .await;
    let tiers = json!([
        {"name": "bronze", "promote": 1},
        {"name": "silver", "promote": 1, "relegate": 1,
         "prizes": [{"from": 1, "to": 1, "reward": "silver-cup", "amount": 1}]},
        {"name": "gold", "relegate": 1}
    ]);
    let league = json!({"cohort_size": 2, "tiers": tiers,
                        "prizes": [{"from": 1, "to": 1, "reward": "cup", "amount": 10}]});
    let (status, body) = p.declare_competition("ladder", league).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (cancel, running) = projector(&p);

    // Each run is entered at the start of its period, so that every entry and score lands
    // in it.
    let run1 = fresh_run(&p, "").await;
    let mut cohort_of = BTreeMap::new();
    for user in ["ann", "bob", "cat", "dan"] {
        let (status, body) = p.enter(TEST_TOKEN, "ladder", user).await;
        assert_eq!(
            (status, &body["run"], &body["tier"]),
            (StatusCode::CREATED, &json!(run1), &json!(0)),
            "{body}"
        );
        cohort_of.insert(user, body["cohort"].as_i64().expect("cohort"));
    }
    assert_eq!(
        cohort_of.values().copied().collect::<Vec<_>>(),
        vec![1, 1, 2, 2]
    );
    for (user, points) in [("ann", 10), ("bob", 5), ("cat", 3), ("dan", 8)] {
        score(&p, "ladder", user, points).await;
    }
    // Cat is banned before the close: left out of its cohort's standings, which the
    // verification explains.
    let ban = json!({"action_id": uuid::Uuid::new_v4().to_string(), "action": "ban",
                     "user_id": "cat", "reason": "aimbot"});
    let (status, body) = p
        .request(TEST_TOKEN, "POST", "/v1/moderation", Some(ban))
        .await;
    assert!(status.is_success(), "{body}");
    // A score from a player who did not enter this run is refused.
    let (status, body) = p
        .post_json(
            "ladder",
            json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": "eve", "score": 1}),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "competition_not_entered"),
        "{body}"
    );

    // The next run: the first entry finds run 1 unclosed and closes it; the tops of run 1's
    // cohorts (ann, dan) are silver now and meet in one cohort.
    let run2 = fresh_run(&p, &run1).await;
    let mut tier_of = BTreeMap::new();
    for user in ["ann", "bob", "dan"] {
        let (status, body) = p.enter(TEST_TOKEN, "ladder", user).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["run"], json!(run2), "{body}");
        tier_of.insert(
            user,
            (
                body["tier_name"].clone(),
                body["cohort"].as_i64().expect("cohort"),
            ),
        );
    }
    assert_eq!(tier_of["ann"].0, json!("silver"));
    assert_eq!(tier_of["dan"].0, json!("silver"));
    assert_eq!(tier_of["bob"].0, json!("bronze"));
    assert_eq!(tier_of["ann"].1, tier_of["dan"].1, "{tier_of:?}");
    assert_ne!(tier_of["ann"].1, tier_of["bob"].1, "{tier_of:?}");
    // Run 1's results are final, with the bronze prize table (the competition's).
    let (_, results) = p
        .get(
            TEST_TOKEN,
            &format!("/v1/competitions/ladder/results?run={run1}&cohort=1"),
        )
        .await;
    assert_eq!(
        (
            &results["final"],
            users(&results),
            &results["entries"][0]["prize"]["reward"]
        ),
        (
            &json!(true),
            vec!["ann".to_owned(), "bob".to_owned()],
            &json!("cup")
        ),
        "{results}"
    );
    // A run with cohorts ranks by cohort: its results name one.
    let (status, body) = p
        .get(
            TEST_TOKEN,
            &format!("/v1/competitions/ladder/results?run={run1}"),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "cohort_required"),
        "{body}"
    );
    // Ann's history: silver now, moved up by run 1's close from first place.
    let (_, ann) = p
        .get(TEST_TOKEN, "/v1/competitions/ladder/players/ann")
        .await;
    assert_eq!(
        (&ann["tier"], &ann["tier_name"], &ann["runs"][1]["run"]),
        (&json!(1), &json!("silver"), &json!(run1)),
        "{ann}"
    );
    assert_eq!(
        (&ann["runs"][1]["position"], &ann["runs"][1]["moved_to"]),
        (&json!(1), &json!(1)),
        "{ann}"
    );
    // Run 2: dan beats ann in silver (dan to gold, ann back to bronze).
    score(&p, "ladder", "ann", 1).await;
    score(&p, "ladder", "dan", 2).await;
    score(&p, "ladder", "bob", 4).await;
    let after_run2 = fresh_run(&p, &run2).await;
    assert!(after_run2 > run2);
    assert!(p.env.wait_drained(Duration::from_secs(10)).await);
    let (status, closed) = p
        .request(
            TEST_TOKEN,
            "POST",
            &format!("/v1/competitions/ladder/runs/{run2}/close"),
            None,
        )
        .await;
    assert_eq!(
        (status, &closed["outcome"]),
        (StatusCode::OK, &json!("closed")),
        "{closed}"
    );
    let (_, verified) = p
        .get(TEST_TOKEN, "/v1/competitions/ladder/verification")
        .await;
    assert_eq!(
        verified["outcome"],
        json!("holds_with_explained_changes"),
        "{verified}"
    );
    let runs = verified["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{verified}");
    // Each board of a run verified in one statement says what `period verify` says of it
    // alone: run 1's cohort 2 left cat out (banned at the close), the rest hold.
    let db = p.env.database();
    let ladder = BoardId::parse("ladder").expect("id");
    for (run, checked) in [(&run1, &runs[0]), (&run2, &runs[1])] {
        let mut alone = [0i64; 3];
        for cohort in 1..=2 {
            let key = format!("{run}~{cohort:06}");
            let Some(v) = ledgerboard_core::board::periods::verify(&db, &ladder, &key)
                .await
                .expect("verify")
            else {
                continue;
            };
            alone[match v.outcome() {
                Outcome::Holds => 0,
                Outcome::HoldsWithExplainedChanges => 1,
                Outcome::DoesNotHold => 2,
            }] += 1;
        }
        let grouped = [
            &checked["boards_hold"],
            &checked["boards_explained"],
            &checked["boards_broken"],
        ]
        .map(|n| n.as_i64().unwrap_or(-1));
        assert_eq!(grouped, alone, "run {run}: {checked}");
    }
    assert_eq!(runs[0]["boards_explained"], json!(1), "{verified}");
    let (_, r1) = p
        .request(
            TEST_TOKEN,
            "POST",
            &format!("/v1/competitions/ladder/runs/{run1}/close"),
            None,
        )
        .await;
    assert_eq!(
        (&r1["outcome"], &closed["run"]["previous"]),
        (&json!("already_closed"), &r1["run"]["digest"]),
        "run 2 chains to run 1: {r1} {closed}"
    );
    let (_, dan) = p
        .get(TEST_TOKEN, "/v1/competitions/ladder/players/dan")
        .await;
    let (_, ann) = p
        .get(TEST_TOKEN, "/v1/competitions/ladder/players/ann")
        .await;
    assert_eq!(
        (&dan["tier_name"], &ann["tier_name"]),
        (&json!("gold"), &json!("bronze")),
        "{dan} {ann}"
    );

    // The console lists both closed runs, with their moves and chained digests.
    let (status, page) = crate::console::page(&p.app, "/console/competitions").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let short = |d: &Value| d.as_str().map(|d| d[..16].to_owned()).unwrap_or_default();
    assert!(
        page.contains(&format!(r#"<tr data-run="ladder~{run1}">"#))
            && page.contains(&format!(r#"<tr data-run="ladder~{run2}">"#))
            && page.contains(&short(&r1["run"]["digest"]))
            && page.contains("tiers bronze, silver, gold"),
        "{page}"
    );

    // A frozen row of run 1 edited by hand: run 1 does not hold, nor run 2, which chains to it.
    let client = p.env.db.client().await;
    let changed = client
        .execute(
            "UPDATE period_standings SET score = score + 1 \
             WHERE board_id = 'ladder' AND period = $1 AND position = 2",
            &[&format!("{run1}~000001")],
        )
        .await
        .expect("tamper");
    assert_eq!(changed, 1);
    let (_, verified) = p
        .get(TEST_TOKEN, "/v1/competitions/ladder/verification")
        .await;
    let outcomes: Vec<&Value> = verified["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| &r["outcome"])
        .collect();
    assert_eq!(
        (&verified["outcome"], outcomes),
        (
            &json!("does_not_hold"),
            vec![&json!("does_not_hold"), &json!("does_not_hold")]
        ),
        "{verified}"
    );
    cancel.cancel();
    running.await.expect("projector task");
}
