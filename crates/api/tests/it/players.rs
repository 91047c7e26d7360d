//! Player tokens and boards' write policy (issue 38, items 1 and 2): a game client holding only
//! a token its backend minted posts its own player's scores to a `player` board, and every
//! other use is refused with its own code, nothing written: no score event, entry or outbox
//! row in PostgreSQL (the outbox is the only way into Redis), and nothing in Redis after the
//! boards are rebuilt from PostgreSQL. The router in process, on a database and a Redis
//! namespace of the test's own.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{TestEnv, app_with, send};
use ledgerboard_api::settings::ReadAccess;
use ledgerboard_core::auth::player::{self, Claims, SigningKey};
use ledgerboard_testkit::TEST_TOKEN;
use serde_json::{Value, json};

/// The HS256 secret of kid `k1` (35 bytes, base64url).
pub(crate) const SECRET: &str = "cGxheWVyLXRva2Vucy1zZWNyZXQtb2YtdGhlLXRlc3Q";
/// Another secret, under the same kid: what a forger without the secret has.
pub(crate) const FORGED: &str = "Zm9yZ2VkLWZvcmdlZC1mb3JnZWQtZm9yZ2VkLWZvcmdlZA";

pub(crate) struct Players {
    pub(crate) env: TestEnv,
    pub(crate) app: axum::Router,
    /// The Ed25519 signing half of kid `ed`.
    ed: SigningKey,
}

pub(crate) fn claims(user: &str, boards: &[&str], exp: u64) -> Claims {
    Claims {
        sub: user.to_owned(),
        boards: boards.iter().map(|b| (*b).to_owned()).collect(),
        exp,
        nbf: None,
        aud: None,
    }
}

pub(crate) fn mint(kid: &str, secret: &str, claims: &Claims) -> String {
    SigningKey::parse(kid, &format!("HS256:{secret}"))
        .expect("key")
        .mint(claims)
        .expect("mint")
}

impl Players {
    pub(crate) async fn new(tweak: impl FnOnce(&mut common::Settings)) -> Players {
        let (ed_signing, ed_verifying) = player::generate("EdDSA").expect("key");
        let env = TestEnv::new(|s| {
            s.auth.player_keys = format!("k1=HS256:{SECRET}; ed={ed_verifying}").into();
            tweak(s);
        })
        .await;
        let app = app_with(&env.settings);
        Players {
            ed: SigningKey::parse("ed", &ed_signing).expect("signing key"),
            env,
            app,
        }
    }

    /// With the boards of the tests declared.
    async fn with_boards(tweak: impl FnOnce(&mut common::Settings)) -> Players {
        let players = Players::new(tweak).await;
        // `runs` takes players' scores and feeds `runs-daily` (whose own policy is the
        // default, server: a command is judged by the board it is sent to); `officials` is
        // declared with the default policy; `arena` takes players' scores too.
        players
            .define("runs-daily", json!({"operator": "best", "reset": "daily"}))
            .await;
        for (board, body) in [
            (
                "runs",
                json!({"operator": "best", "write_policy": "player", "feeds": ["runs-daily"]}),
            ),
            ("officials", json!({"operator": "best"})),
            (
                "arena",
                json!({"operator": "best", "write_policy": "player"}),
            ),
        ] {
            players.define(board, body).await;
        }
        players
    }

    pub(crate) async fn define(&self, board: &str, body: Value) {
        let (status, answer) = self
            .request(
                TEST_TOKEN,
                "PUT",
                &format!("/v1/boards/{board}"),
                Some(body),
            )
            .await;
        assert!(status.is_success(), "define {board}: {status} {answer}");
    }

    /// `method` on `uri` with `token`, and `body` as JSON.
    pub(crate) async fn request(
        &self,
        token: &str,
        method: &str,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, format!("Bearer {token}"));
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        };
        send(&self.app, request.expect("request")).await
    }

    async fn post(&self, token: &str, board: &str, user: &str, event: &str) -> (StatusCode, Value) {
        let body = json!({"event_id": event, "user_id": user, "score": 42});
        self.request(
            token,
            "POST",
            &format!("/v1/boards/{board}/scores"),
            Some(body),
        )
        .await
    }

    /// A score command with a service token.
    pub(crate) async fn post_json(&self, board: &str, body: Value) -> (StatusCode, Value) {
        self.request(
            TEST_TOKEN,
            "POST",
            &format!("/v1/boards/{board}/scores"),
            Some(body),
        )
        .await
    }

    pub(crate) async fn get(&self, token: &str, uri: &str) -> (StatusCode, Value) {
        self.request(token, "GET", uri, None).await
    }

    /// Score events, entries and outbox rows in PostgreSQL, over every board.
    pub(crate) async fn written(&self) -> (i64, i64, i64) {
        let client = self.env.db.client().await;
        let count = |table: &str| format!("SELECT count(*) FROM {table}");
        let mut out = [0i64; 3];
        for (i, table) in ["score_events", "user_scores", "leaderboard_outbox"]
            .into_iter()
            .enumerate()
        {
            out[i] = client
                .query_one(&count(table), &[])
                .await
                .expect("count")
                .get(0);
        }
        (out[0], out[1], out[2])
    }

    /// Every board rebuilt from PostgreSQL, then what Redis holds of each: user → score.
    pub(crate) async fn in_redis(&self, boards: &[&str]) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for board in boards {
            common::seal(&self.env, board).await;
            let users = self.env.projection(board).await.into_keys().collect();
            out.push(((*board).to_owned(), users));
        }
        out
    }
}

pub(crate) fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_player_token_posts_its_own_scores_and_every_other_use_is_refused_with_its_own_code() {
    let p = Players::with_boards(|_| {}).await;
    let now = player::now_s();
    let alice = |boards: &[&str]| mint("k1", SECRET, &claims("alice", boards, now + 600));
    let event = || uuid::Uuid::new_v4().to_string();
    let cases: Vec<(&str, String, &str, &str, StatusCode, &str)> = vec![
        (
            "a forged signature",
            mint("k1", FORGED, &claims("alice", &["runs"], now + 600)),
            "runs",
            "alice",
            StatusCode::UNAUTHORIZED,
            "token_signature",
        ),
        (
            "an expired token",
            mint("k1", SECRET, &claims("alice", &["runs"], now - 120)),
            "runs",
            "alice",
            StatusCode::UNAUTHORIZED,
            "token_expired",
        ),
        (
            "a key rotated out",
            mint("k0", SECRET, &claims("alice", &["runs"], now + 600)),
            "runs",
            "alice",
            StatusCode::UNAUTHORIZED,
            "token_key_unknown",
        ),
        (
            "another player's user id",
            alice(&["runs"]),
            "runs",
            "bob",
            StatusCode::FORBIDDEN,
            "player_user",
        ),
        (
            "a board outside the token",
            alice(&["runs"]),
            "arena",
            "alice",
            StatusCode::FORBIDDEN,
            "player_board",
        ),
        (
            "a board whose write policy is server",
            alice(&["*"]),
            "officials",
            "alice",
            StatusCode::FORBIDDEN,
            "board_server_only",
        ),
        (
            "a fed board, posted to directly",
            alice(&["runs*"]),
            "runs-daily",
            "alice",
            StatusCode::FORBIDDEN,
            "board_server_only",
        ),
        (
            "an undeclared board (server, as every board before)",
            alice(&["*"]),
            "nowhere",
            "alice",
            StatusCode::FORBIDDEN,
            "board_server_only",
        ),
    ];
    for (what, token, board, user, status, expected) in &cases {
        let (got, body) = p.post(token, board, user, &event()).await;
        assert_eq!((got, code(&body)), (*status, *expected), "{what}: {body}");
    }
    // What else a player token may not do.
    let everywhere = alice(&["*"]);
    let (status, body) = p
        .request(
            &everywhere,
            "PUT",
            "/v1/boards/mine",
            Some(json!({"operator": "add"})),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "player_scope"),
        "{body}"
    );
    let moderation =
        json!({"action_id": event(), "action": "ban", "user_id": "bob", "reason": "x"});
    let (status, body) = p
        .request(&everywhere, "POST", "/v1/moderation", Some(moderation))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "player_scope"),
        "{body}"
    );
    // Nothing was written anywhere, in PostgreSQL or (rebuilt from it) in Redis.
    assert_eq!(p.written().await, (0, 0, 0));
    let boards = ["runs", "arena", "officials", "nowhere"];
    for (board, users) in p.in_redis(&boards).await {
        assert!(users.is_empty(), "{board} in Redis: {users:?}");
    }

    // Alice's own score, with a token of the other key (EdDSA): applied to the board and the
    // board it feeds; the same command again is the same outcome.
    let token =
        p.ed.mint(&claims("alice", &["runs"], now + 600))
            .expect("mint");
    let id = event();
    let (status, first) = p.post(&token, "runs", "alice", &id).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["linked"][0]["board"], "runs-daily", "{first}");
    let (status, again) = p.post(&token, "runs", "alice", &id).await;
    assert_eq!(
        (status, &again["duplicate"]),
        (StatusCode::OK, &json!(true)),
        "{again}"
    );
    // Two events (the command's and its fed board's), two entries, two outbox rows: the
    // counts above could see writes.
    assert_eq!(p.written().await, (2, 2, 2));
    assert_eq!(
        p.in_redis(&["runs"]).await,
        vec![("runs".to_owned(), vec!["alice".to_owned()])]
    );
    // A service token still writes any user on the board.
    let (status, body) = p.post(TEST_TOKEN, "runs", "bob", &event()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // The policy changed back to server: the same token is refused from the next command on.
    p.define("runs", json!({"operator": "best", "feeds": ["runs-daily"]}))
        .await;
    let (status, body) = p.post(&token, "runs", "alice", &event()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "board_server_only"),
        "{body}"
    );
    let (status, body) = p.get(TEST_TOKEN, "/v1/boards/runs").await;
    assert_eq!(
        (status, &body["write_policy"]),
        (StatusCode::OK, &json!("server")),
        "{body}"
    );
}

#[tokio::test]
async fn with_token_reads_a_player_reads_its_own_entry_only() {
    let p = Players::with_boards(|s| s.auth.reads = ReadAccess::Token).await;
    let alice = mint(
        "k1",
        SECRET,
        &claims("alice", &["runs"], player::now_s() + 600),
    );
    let (status, body) = p.get(&alice, "/v1/boards/runs/users/alice").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "its own entry, not there yet: {body}"
    );
    let (status, body) = p
        .post(&alice, "runs", "alice", &uuid::Uuid::new_v4().to_string())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = p
        .get(&alice, "/v1/boards/runs/users/alice?consistency=strong")
        .await;
    assert_eq!(
        (status, &body["score"]),
        (StatusCode::OK, &json!(42)),
        "{body}"
    );
    for uri in [
        "/v1/boards/runs/users/bob",
        "/v1/boards/runs/top",
        "/v1/boards/arena/users/alice",
        "/v1/boards",
    ] {
        let (status, body) = p.get(&alice, uri).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::FORBIDDEN, "player_scope"),
            "{uri}: {body}"
        );
    }
}

#[tokio::test]
async fn a_players_requests_share_one_bucket_at_the_players_rate_whichever_key_minted_the_token() {
    // One request a minute per player; tokens keep their own (large) rate.
    let p = Players::new(|s| {
        s.api.player_rate_limit_per_min = 1;
        s.api.player_rate_limit_burst = 1;
    })
    .await;
    let now = player::now_s();
    let alice = mint("k1", SECRET, &claims("alice", &["runs"], now + 600));
    // (No board is declared: an unknown member of an undeclared board is a 404.)
    let (status, body) = p.get(&alice, "/v1/boards/runs/users/alice").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let other_key =
        p.ed.mint(&claims("alice", &["runs"], now + 600))
            .expect("mint");
    let (status, headers, text) = common::send_with_headers(
        &p.app,
        Request::get("/v1/boards/runs/users/alice")
            .header(header::AUTHORIZATION, format!("Bearer {other_key}"))
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{text}");
    let retry: u64 = headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(
        (30..=60).contains(&retry),
        "a minute's rate: Retry-After {retry}"
    );
    let bob = mint("k1", SECRET, &claims("bob", &["runs"], now + 600));
    let (status, body) = p.get(&bob, "/v1/boards/runs/users/bob").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "bob has his own bucket: {body}"
    );
    // A service token is not counted at the players' rate.
    for _ in 0..3 {
        let (status, body) = p.get(TEST_TOKEN, "/v1/boards/runs/users/alice").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }
}
