//! The OpenAPI document, fuzzed against a running `ledgerboard-api` with schemathesis
//! (`pip install schemathesis`): no answer may be a 5xx, and every answer must conform to
//! the document (status code, content type, headers, body schema). Schema-invalid requests
//! must be refused.
//!
//! One check is left out: `positive_data_acceptance` (every schema-valid request accepted).
//! JSON Schema counts a user id's length in characters, the api in bytes (at most 128 bytes
//! of UTF-8), so 128 multi-byte characters are schema-valid and rightly refused.

use std::time::Duration;

use ledgerboard_testkit::{
    Process, TEST_TOKEN, TestDb, TestRedis, daemon_env, migrate, workspace_binary,
};

/// The HS256 secret of the player key `fuzz` (32 bytes, base64url): the api verifies the
/// player token the second run sends with it.
const PLAYER_SECRET: &str = "ZnV6ei1wbGF5ZXItdG9rZW5zLXNlY3JldC1vZi10ZXN0";

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_in_the_openapi_document() {
    // A service token (every scope), then a player token (issue 38): every route must answer
    // a player as documented (its own codes: player_scope, player_board, attempt_*), never 5xx.
    let claims = ledgerboard_core::auth::player::Claims {
        sub: "fuzz-player".into(),
        boards: vec!["*".into()],
        exp: ledgerboard_core::auth::player::now_s() + 3600,
        nbf: None,
        aud: None,
    };
    let player = ledgerboard_core::auth::player::SigningKey::parse(
        "fuzz",
        &format!("HS256:{PLAYER_SECRET}"),
    )
    .expect("key")
    .mint(&claims)
    .expect("a player token");
    for (who, token, examples) in [("service", TEST_TOKEN, "150"), ("player", &player, "60")] {
        fuzz(who, token, examples).await;
    }
}

async fn fuzz(who: &str, token: &str, examples: &str) {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    migrate(&db.url).await;
    let mut env = daemon_env(&db, &redis);
    // A port of the api's own choice, read from its log (no port found free and bound again).
    env.push(("LEDGERBOARD__API__LISTEN".into(), "127.0.0.1:0".into()));
    // The fuzzer is one client sending as fast as it can.
    env.push(("LEDGERBOARD__API__RATE_LIMIT_PER_S".into(), "0".into()));
    env.push((
        "LEDGERBOARD__API__PLAYER_RATE_LIMIT_PER_MIN".into(),
        "0".into(),
    ));
    // GET /v1/events may wait up to 30 s for an event (its `wait`), past the fuzzer's 5 s
    // request timeout; the server's bound cuts every wait short.
    env.push(("LEDGERBOARD__API__EVENTS_MAX_WAIT_MS".into(), "200".into()));
    env.push((
        "LEDGERBOARD__AUTH__PLAYER_KEYS".into(),
        format!("fuzz=HS256:{PLAYER_SECRET}"),
    ));
    let env = ledgerboard_harness::env_refs(&env);
    let binary = workspace_binary("ledgerboard-api");
    let mut api = Process::start(&binary.to_string_lossy(), &[], &env);
    let addr = api.wait_for_addr("ledgerboard-api started", Duration::from_secs(20));

    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/schemathesis.toml");
    let output = tokio::process::Command::new("st")
        .args(["--config-file", config])
        .args(["run", &format!("http://{addr}/openapi.json")])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args([
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
        ])
        .args([
            "--max-examples",
            examples,
            "--request-timeout",
            "5",
            "--seed",
            "1",
        ])
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(600), output)
        .await
        .expect("schemathesis ran for more than 10 minutes")
        .expect("run schemathesis (`pip install schemathesis` puts `st` on PATH)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "schemathesis found problems with a {who} token:\n{text}"
    );
    assert!(text.contains("generated"), "no test case ran:\n{text}");
    assert!(
        !api.stderr().contains("panicked"),
        "the api panicked under the fuzzer:\n{}",
        api.stderr()
    );
}
