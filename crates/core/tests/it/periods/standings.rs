//! periods: standings.

use super::*;

#[tokio::test]
async fn a_close_freezes_the_standings_once_and_verify_checks_them() {
    let env = env().await;
    // A time trial: lowest first, equal times by who set them first.
    definition::declare(
        &env.db,
        &board("cup"),
        &Declaration {
            operator: Some(Operator::Best),
            sort: Some(ledgerboard_core::board::definition::Sort::Ascending),
            tie_break: Some(ledgerboard_core::board::definition::TieBreak::Earliest),
            reset: Some(Reset::Manual),
            ..Declaration::default()
        },
    )
    .await
    .expect("declare");
    let period = best(&env.db, "cup", "ann", 50)
        .await
        .period
        .expect("period");
    for (user, time) in [
        ("bob", 48),
        ("cid", 50),
        ("dan", 52),
        ("eve", 47),
        ("ann", 49),
    ] {
        best(&env.db, "cup", user, time).await;
    }
    // eve is banned and dan removed before the close: neither is in the standings.
    let cup = board("cup").in_period(&period).expect("period board");
    let user = |u: &str| ledgerboard_core::model::UserId::parse(u).expect("user");
    moderate(&env.db, moderation::Action::Ban { user: user("eve") }).await;
    moderate(
        &env.db,
        moderation::Action::Remove {
            board: cup.clone(),
            user: user("dan"),
        },
    )
    .await;
    // cid is banned and unbanned again: in the standings, at a version no event carries (each
    // ban and unban re-versions the entries; the chaos run found verify calling that a
    // disagreement).
    moderate(&env.db, moderation::Action::Ban { user: user("cid") }).await;
    moderate(&env.db, moderation::Action::Unban { user: user("cid") }).await;

    // Open: not ended.
    assert_eq!(
        periods::close(&env.db, &board("cup"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::NotEnded
    );
    periods::reset(&env.db, &board("cup"), "test")
        .await
        .expect("reset");
    wait_until(Duration::from_secs(5), || async {
        env.current("cup").await.current != period
    })
    .await
    .expect("the next period opens");
    // Ended, but nothing was projected yet (no projector runs here): the close waits for it.
    assert_eq!(
        periods::close(&env.db, &board("cup"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::Pending
    );
    env.mark_projected().await;

    let closed = match periods::close(&env.db, &board("cup"), &period)
        .await
        .expect("close")
    {
        periods::CloseOutcome::Closed(c) => c,
        other => panic!("expected a close, got {other:?}"),
    };
    // ann improved to 49 after bob's 48: bob, ann; cid at 50; ties none left. The earliest
    // boards' ties are the database's: read them to build the expected lines.
    let ties: BTreeMap<String, i64> = env
        .client
        .query(
            "SELECT user_id, tie FROM user_scores WHERE board_id = $1",
            &[&cup.as_str()],
        )
        .await
        .expect("ties")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let expected =
        [(1, "bob", 48), (2, "ann", 49), (3, "cid", 50)].map(|(p, u, s)| (p, u, s, ties[u]));
    assert_eq!(closed.entries, 3);
    assert_eq!(
        closed.digest,
        digest(&expected),
        "the digest of the lines the test expects"
    );
    assert_eq!(
        (closed.sort.as_str(), closed.tie_break.as_str()),
        ("ascending", "earliest")
    );
    let rows = periods::standings(&env.db, &board("cup"), &period, 0, 10)
        .await
        .expect("standings");
    let got: Vec<(i64, i64, String, i64)> = rows
        .iter()
        .map(|r| (r.position, r.rank, r.user_id.clone(), r.score))
        .collect();
    assert_eq!(
        got,
        [
            (1, 1, "bob".to_owned(), 48),
            (2, 2, "ann".to_owned(), 49),
            (3, 3, "cid".to_owned(), 50)
        ]
    );

    // Closing twice writes once.
    assert_eq!(
        periods::close(&env.db, &board("cup"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::AlreadyClosed(closed.clone())
    );
    let verified = periods::verify(&env.db, &board("cup"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert!(verified.holds(), "{verified:?}");
    assert_eq!(
        (
            verified.agree,
            verified.left_out,
            verified.left_out_unexplained
        ),
        (3, 2, 0),
        "eve (banned) and dan (removed) are left out, and explained"
    );

    // An edit of a frozen row is found twice: the digest, and the events.
    env.client
        .execute(
            "UPDATE period_standings SET score = 47 WHERE board_id = 'cup' AND position = 1",
            &[],
        )
        .await
        .expect("tamper");
    let tampered = periods::verify(&env.db, &board("cup"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert!(
        !tampered.holds() && !tampered.digest_matches,
        "{tampered:?}"
    );
    assert_eq!(tampered.disagree, 1, "{tampered:?}");
    env.client
        .execute(
            "UPDATE period_standings SET score = 48 WHERE board_id = 'cup' AND position = 1",
            &[],
        )
        .await
        .expect("restore");

    // An erasure reaches the frozen rows too: the pseudonym replaces ann there as in her
    // events, so the rows still agree with the events, and the erasure re-sealed the digest
    // over the rows it left (migration V13), so it matches the new seal.
    moderate(&env.db, moderation::Action::Erase { user: user("ann") }).await;
    let left: i64 = env
        .client
        .query_one(
            "SELECT count(*) FROM period_standings WHERE user_id = 'ann'",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(left, 0, "the erased id is gone from the frozen standings");
    let after = periods::verify(&env.db, &board("cup"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert_eq!(
        (
            after.digest_matches,
            after.erased,
            after.disagree,
            after.agree
        ),
        (true, 1, 0, 3),
        "{after:?}"
    );
    assert_eq!(
        after.outcome(),
        periods::Outcome::HoldsWithExplainedChanges,
        "{after:?}"
    );
}
