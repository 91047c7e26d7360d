//! periods: a board with columns. The close ranks by the whole tuple, freezes every column,
//! and its digest covers them: an edit of a frozen row's other column is found by verify.

use super::*;
use ledgerboard_core::board::definition::{Column, Sort};

#[tokio::test]
async fn a_close_of_a_board_with_columns_freezes_and_seals_every_column() {
    let env = env().await;
    // Laps descending, then time ascending; equal tuples by who set them first.
    let column = |name: &str, order| Column {
        name: name.into(),
        order,
        min: 0,
        max: 1_000_000,
    };
    definition::declare(
        &env.db,
        &board("gp"),
        &Declaration {
            operator: Some(Operator::Best),
            tie_break: Some(ledgerboard_core::board::definition::TieBreak::Earliest),
            reset: Some(Reset::Manual),
            columns: Some(vec![
                column("laps", Sort::Descending),
                column("time_ms", Sort::Ascending),
            ]),
            ..Declaration::default()
        },
    )
    .await
    .expect("declare");
    let post = |user: &'static str, value: &'static str| {
        let db = env.db.clone();
        async move {
            let def = definition::get(&db, &board("gp"))
                .await
                .expect("definition");
            let value: Submitted = serde_json::from_str(value).expect("value");
            let cmd = board::command(
                &def,
                &Uuid::new_v4().to_string(),
                user,
                Some(&value),
                None,
                None,
            )
            .expect("valid command");
            apply_score_command(&db, &cmd, None).await.expect("applied")
        }
    };
    let period = post("ann", "[10, 95000]").await.period.expect("period");
    post("bob", "[10, 90000]").await;
    post("cid", "[11, 99000]").await;
    post("dan", "[10, 90000]").await;
    periods::reset(&env.db, &board("gp"), "test")
        .await
        .expect("reset");
    wait_until(Duration::from_secs(5), || async {
        env.current("gp").await.current != period
    })
    .await
    .expect("the next period opens");
    env.mark_projected().await;
    let closed = match periods::close(&env.db, &board("gp"), &period)
        .await
        .expect("close")
    {
        periods::CloseOutcome::Closed(c) => c,
        other => panic!("expected a close, got {other:?}"),
    };
    assert_eq!(closed.columns.len(), 2);
    let rows = periods::standings(&env.db, &board("gp"), &period, 0, 10)
        .await
        .expect("standings");
    // cid (11 laps) first; bob and dan tied on both columns, bob first (earlier); then ann.
    type Line<'a> = (i64, i64, i64, &'a str, Option<Vec<i64>>);
    let got: Vec<Line> = rows
        .iter()
        .map(|r| {
            (
                r.position,
                r.rank,
                r.dense_rank,
                r.user_id.as_str(),
                r.scores.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, 1, 1, "cid", Some(vec![11, 99_000])),
            (2, 2, 2, "bob", Some(vec![10, 90_000])),
            (3, 2, 2, "dan", Some(vec![10, 90_000])),
            (4, 4, 3, "ann", Some(vec![10, 95_000])),
        ]
    );
    // The digest covers the other column (stored in order-key form: time negated).
    let tie = |u: &str| {
        let c = &env.client;
        let table = board("gp").in_period(&period).expect("period board");
        let u = u.to_owned();
        async move {
            c.query_one(
                "SELECT tie FROM user_scores WHERE board_id = $1 AND user_id = $2",
                &[&table.as_str(), &u],
            )
            .await
            .expect("tie")
            .get::<_, i64>(0)
        }
    };
    let lines = [
        (1, "cid", 11, -99_000, tie("cid").await),
        (2, "bob", 10, -90_000, tie("bob").await),
        (3, "dan", 10, -90_000, tie("dan").await),
        (4, "ann", 10, -95_000, tie("ann").await),
    ];
    let text: String = lines
        .iter()
        .map(|(p, u, s, c2, t)| format!("{p}\t{u}\t{s}\t{c2}\t{t}"))
        .collect::<Vec<_>>()
        .join("\n");
    use sha2::Digest;
    let want: String = sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(closed.digest, want);
    let verified = periods::verify(&env.db, &board("gp"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert!(verified.holds(), "{verified:?}");
    assert_eq!(verified.agree, 4);
    // A frozen row's time edited by hand: the digest and the events both disagree.
    env.client
        .execute(
            "UPDATE period_standings SET col2 = -89000 WHERE board_id = 'gp' AND position = 2",
            &[],
        )
        .await
        .expect("tamper");
    let tampered = periods::verify(&env.db, &board("gp"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert!(
        !tampered.holds() && !tampered.digest_matches && tampered.disagree == 1,
        "{tampered:?}"
    );
}
