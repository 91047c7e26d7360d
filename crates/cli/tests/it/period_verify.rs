//! `lbctl period verify` as payout tooling runs it: the exit status and `--json`'s outcome
//! tell standings that hold with changes the records explain (a ban at the close, an erasure
//! after it) from standings that do not hold (a frozen row edited by hand).

use ledgerboard_testkit::TestDb;

use crate::common;
use serde_json::{Value, json};

const LBCTL: &str = env!("CARGO_BIN_EXE_lbctl");

fn lbctl(db: &TestDb, args: &[&str]) -> (Option<i32>, String, String) {
    let output = std::process::Command::new(LBCTL)
        .args(args)
        .env("LEDGERBOARD__DATABASE__URL", &db.url)
        .output()
        .expect("run lbctl");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn verify_exits_0_for_explained_changes_and_1_for_a_tampered_row() {
    let db = TestDb::create().await;
    let (code, _, err) = lbctl(&db, &["migrate"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = lbctl(
        &db,
        &[
            "board",
            "create",
            "--board",
            "cup",
            "--operator",
            "add",
            "--reset",
            "manual",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    // Three entries in the first period, written as commands would.
    let client = db.client().await;
    let period = common::first_period(&client, "cup").await;
    let cup = format!("cup~{period}");
    client
        .execute(
            "WITH e AS (
                 INSERT INTO score_events (event_id, board_id, user_id, submitted, operator, score, version)
                 VALUES (gen_random_uuid(), $1, 'ann', 30, 'add', 30, 1),
                        (gen_random_uuid(), $1, 'bob', 20, 'add', 20, 1),
                        (gen_random_uuid(), $1, 'cid', 10, 'add', 10, 1)
                 RETURNING event_id, board_id, user_id, score, version)
             INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT board_id, user_id, score, version FROM e",
            &[&cup],
        )
        .await
        .expect("entries");

    // cid is banned right before the period ends and closes: left out, explained by the ban.
    let (code, _, err) = lbctl(&db, &["user", "ban", "--user", "cid", "--reason", "cheat"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = lbctl(&db, &["board", "reset", "--board", "cup"]);
    assert_eq!(code, Some(0), "{err}");
    common::wait_for_the_next_period(&client, "cup", &cup).await;
    // dan's score was held for review in the period (as the api holds one past a review rule)
    // and is still pending at the close: not in the standings, counted by the verification.
    client
        .execute(
            "INSERT INTO held_scores (event_id, board_id, period_board, user_id, fields, rule, detail, answer)
             VALUES (gen_random_uuid(), 'cup', $1, 'dan', '{\"delta\": 900}', 'ceiling', 'past 500', '{}')",
            &[&format!("cup~{period}")],
        )
        .await
        .expect("held score");
    // No projector runs here: the ban's outbox rows are projected by hand.
    client
        .execute(
            "UPDATE leaderboard_outbox SET published_at = now() WHERE published_at IS NULL",
            &[],
        )
        .await
        .expect("project");
    let (code, _, err) = lbctl(
        &db,
        &["period", "close", "--board", "cup", "--period", &period],
    );
    assert_eq!(code, Some(0), "{err}");

    let verify = |json: bool| {
        let mut args = vec!["period", "verify", "--board", "cup", "--period", &period];
        if json {
            args.push("--json");
        }
        lbctl(&db, &args)
    };
    let parse = |out: &str| -> Value { serde_json::from_str(out).expect("JSON verification") };

    let (code, out, err) = verify(false);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("\tholds with explained changes\t")
            && out.contains("\tdigest matches\t")
            && out.contains("\tleft out=1 (unexplained 0)\t")
            && out.contains("\tbanned at close=1\t")
            && out.contains("\theld for review pending=1 rejected=0"),
        "{out}"
    );
    let (code, out, err) = verify(true);
    assert_eq!(code, Some(0), "{out}{err}");
    let v = parse(&out);
    assert_eq!(v["outcome"], json!("holds_with_explained_changes"), "{v}");
    assert_eq!(v["holds"], json!(true), "{v}");
    assert_eq!(v["verification"]["left_out_banned"], json!(1), "{v}");
    assert_eq!(v["verification"]["left_out_unexplained"], json!(0), "{v}");
    assert_eq!(v["verification"]["held_pending"], json!(1), "{v}");

    // ann is erased after the close (right to erasure): her frozen row is re-keyed and the
    // digest re-sealed; still exit 0, the erasure counted.
    let (code, _, err) = lbctl(
        &db,
        &[
            "user",
            "erase",
            "--user",
            "ann",
            "--reason",
            "asked",
            "--wait-secs",
            "0",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = verify(false);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("\tholds with explained changes\t")
            && out.contains("\tdigest matches\t")
            && out.contains("\tdisagree=0\terased since=1\t")
            && out.contains("\tre-sealed=1 (broken 0)"),
        "{out}"
    );
    let (code, out, err) = verify(true);
    assert_eq!(code, Some(0), "{out}{err}");
    let v = parse(&out);
    assert_eq!(v["outcome"], json!("holds_with_explained_changes"), "{v}");
    assert_eq!(
        (
            &v["verification"]["erased"],
            &v["verification"]["resealed"],
            &v["verification"]["digest_matches"]
        ),
        (&json!(1), &json!(1), &json!(true)),
        "{v}"
    );

    // bob's frozen score edited by hand: exit 1, whatever else was explained.
    client
        .execute(
            "UPDATE period_standings SET score = 21 WHERE user_id = 'bob'",
            &[],
        )
        .await
        .expect("tamper");
    let (code, out, err) = verify(false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("\tDOES NOT HOLD\tdigest does not match\t") && out.contains("\tdisagree=1\t"),
        "{out}"
    );
    let (code, out, err) = verify(true);
    assert_eq!(code, Some(1), "{out}{err}");
    let v = parse(&out);
    assert_eq!(v["outcome"], json!("does_not_hold"), "{v}");
    assert_eq!(v["holds"], json!(false), "{v}");
    assert_eq!(v["verification"]["disagree"], json!(1), "{v}");
    assert!(err.contains("do not hold"), "{err}");
}
