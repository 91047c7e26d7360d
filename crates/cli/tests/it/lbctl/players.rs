//! lbctl: keys and tokens for players (`token player-key`, `token player`) and a board's write
//! policy (`board create|update --write-policy`).

use super::*;
use ledgerboard_core::auth::player::PlayerKeys;

/// The labels of `lbctl token player-key`'s two lines.
const SIGNING: &str = "signing key (shown once; keep it on the game's backend):";
const ENTRY: &str = "auth.player_keys entry (entries are separated by ;):";

/// What follows `label` on the line of `out` that starts with it.
fn after<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in {out}"))
        .trim()
}

#[test]
fn a_generated_key_mints_tokens_its_entry_verifies_and_no_other() {
    for alg in ["EdDSA", "ES256", "HS256"] {
        let run = |args: &[&str], key: Option<&str>| {
            let mut cmd = std::process::Command::new(LBCTL);
            cmd.args(args).env_remove("LEDGERBOARD_PLAYER_SIGNING_KEY");
            if let Some(key) = key {
                cmd.env("LEDGERBOARD_PLAYER_SIGNING_KEY", key);
            }
            let out = cmd.output().expect("run lbctl");
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (ok, out, err) = run(&["token", "player-key", "--kid", "k1", "--alg", alg], None);
        assert!(ok, "{alg}: {err}");
        let signing = after(&out, SIGNING);
        let entry = after(&out, ENTRY);
        let keys = PlayerKeys::parse(entry, "").expect("the printed entry parses");
        if alg != "HS256" {
            assert!(
                !entry.contains(signing.split(':').nth(1).expect("material")),
                "{out}"
            );
        }
        let (ok, token, err) = run(
            &[
                "token",
                "player",
                "--kid",
                "k1",
                "--user",
                "alice",
                "--board",
                "runs,daily-*",
            ],
            Some(signing),
        );
        assert!(ok, "{alg}: {err}");
        let player = keys
            .verify(token.trim())
            .expect("the minted token verifies");
        assert_eq!(player.user.as_str(), "alice");
        // Another key's entry under the same kid does not verify it.
        let (_, other, _) = run(&["token", "player-key", "--kid", "k1", "--alg", alg], None);
        let other = PlayerKeys::parse(after(&other, ENTRY), "").expect("entry");
        assert!(other.verify(token.trim()).is_err(), "{alg}");
        // Without the key in the environment, nothing is minted.
        let (ok, _, err) = run(
            &[
                "token", "player", "--kid", "k1", "--user", "a", "--board", "b",
            ],
            None,
        );
        assert!(
            !ok && err.contains("LEDGERBOARD_PLAYER_SIGNING_KEY"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_boards_write_policy_is_declared_shown_and_changed() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "runs",
            "--operator",
            "best",
            "--write-policy",
            "player",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(runs["write_policy"], "player", "{out}");
    let (ok, out, err) = lbctl(&db, &["board", "show", "--board", "runs"]);
    assert!(ok && out.contains("write_policy=player"), "{out}{err}");
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "update",
            "--board",
            "runs",
            "--write-policy",
            "server",
        ],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = lbctl(&db, &["board", "show", "--board", "runs"]);
    assert!(ok && !out.contains("write_policy"), "{out}{err}");
    let (ok, _, err) = lbctl(
        &db,
        &[
            "board",
            "update",
            "--board",
            "runs",
            "--write-policy",
            "players",
        ],
    );
    assert!(
        !ok && err.contains("--write-policy") && err.contains("server or player"),
        "{err}"
    );
}

#[tokio::test]
async fn held_scores_are_listed_approved_and_rejected_by_lbctl_review() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let (ok, out, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "arena",
            "--operator",
            "best",
            "--review",
            r#"{"ceiling":[1000]}"#,
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let arena: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        arena["review"]["ceiling"],
        serde_json::json!([1000]),
        "{out}"
    );
    // Two held scores, as the api holds them (players_guarded.rs holds them through it).
    let (held, other) = (
        "6f9619ff-8b86-4011-b42d-00c04fc964ff",
        "7f9619ff-8b86-4011-b42d-00c04fc964ff",
    );
    let client = db.client().await;
    for (event, score) in [(held, 5000i64), (other, 7000)] {
        client
            .execute(
                "INSERT INTO held_scores (event_id, board_id, period_board, user_id, fields, rule, detail, answer)
                 VALUES ($1::text::uuid, 'arena', 'arena', 'alice', jsonb_build_object('score', $2::bigint), 'ceiling', 'past 1000', '{}')",
                &[&event, &score],
            )
            .await
            .expect("held score");
    }
    let (ok, out, err) = lbctl(&db, &["review", "list", "--json"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{out}");

    let decide = |what: &str, event: &str| {
        lbctl(
            &db,
            &[
                "review",
                what,
                "--event",
                event,
                "--reason",
                "seen the replay",
                "--json",
            ],
        )
    };
    let (ok, out, err) = decide("approve", held);
    assert!(ok, "{err}");
    let approved: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(approved["outcome"]["score"], 5000, "{out}");
    let (ok, _, err) = decide("reject", other);
    assert!(ok, "{err}");
    let (ok, _, err) = decide("approve", other);
    assert!(!ok && err.contains("rejected already"), "{err}");
    let score: i64 = client
        .query_one(
            "SELECT score FROM user_scores WHERE board_id = 'arena' AND user_id = 'alice'",
            &[],
        )
        .await
        .expect("the approved entry")
        .get(0);
    assert_eq!(score, 5000);
    let (ok, out, _) = lbctl(&db, &["review", "list", "--state", "rejected", "--json"]);
    assert!(ok && out.contains("seen the replay"), "{out}");
}
