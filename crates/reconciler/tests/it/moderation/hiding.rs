//! moderation: hiding.

use super::*;

#[tokio::test]
async fn a_ban_hides_the_user_everywhere_ranks_close_up_and_an_unban_restores_the_scores() {
    let env = seeded().await;
    let keys = env.store().keys().clone();
    let ban_id = Uuid::new_v4();
    let result = run(&env, ban_id, Action::Ban { user: user("x") }, "aimbot").await;
    assert_eq!(result["entries"], 2, "{result}");
    assert_eq!(result["boards"], serde_json::json!(["b", "w"]));

    // The database path hides x at once; Redis still holds it until the outbox rows are
    // projected (and the reads of Redis are the ones the freshness contract covers).
    let ranks = database_read(&env, "b", RankMode::Competition).await;
    assert_eq!(
        ranks,
        (
            vec![
                (1, "a".into(), 50, "100.000".into()),
                (2, "c".into(), 40, "75.000".into()),
                (2, "bo".into(), 40, "75.000".into()),
                (4, "d".into(), 30, "25.000".into()),
            ],
            4
        )
    );
    assert_eq!(
        zscore(&env, &keys.scores(&board("b")), "x").await,
        Some(100.0),
        "not projected yet"
    );
    drain(&env).await;
    let modes = both_paths(&env, "b", &["a", "c", "bo", "d"]).await;
    assert_eq!(modes["competition"], ranks);
    let dense: Vec<u64> = modes["dense"].0.iter().map(|e| e.0).collect();
    assert_eq!(dense, [1, 2, 2, 3]);
    let ordinal: Vec<u64> = modes["ordinal"].0.iter().map(|e| e.0).collect();
    assert_eq!(ordinal, [1, 2, 3, 4]);
    both_paths(&env, "w", &["a"]).await;
    // Redis, raw: no member, version or metadata of x; a tombstone at the ban's version; the
    // distinct scores and the seal's dcard without x's 100.
    let b = board("b");
    assert_eq!(zscore(&env, &keys.scores(&b), "x").await, None);
    assert_eq!(hget(&env, &keys.versions(&b), "x").await, None);
    assert_eq!(hget(&env, &keys.metadata(&b), "x").await, None);
    assert_eq!(
        hget(&env, &keys.tombstones(&b), "x").await.as_deref(),
        Some("2")
    );
    assert_eq!(zscore(&env, &keys.distinct(&b), "100").await, None);
    assert_eq!(
        hget(&env, &keys.meta(&b), "card").await.as_deref(),
        Some("4")
    );
    assert_eq!(
        hget(&env, &keys.meta(&b), "dcard").await.as_deref(),
        Some("3")
    );

    // A score of x projected late (version 1, from before the ban) is stale: x stays hidden.
    let late = ProjectionEntry {
        outbox_id: 0,
        event_id: EventId::from(Uuid::new_v4()),
        board: b.clone(),
        user_id: user("x"),
        score: 100,
        version: 1,
        key: Default::default(),
        metadata: None,
        change: EntryChange::Place,
    };
    let outcome = apply_batch(&env.store(), &[late], Duration::from_secs(60))
        .await
        .expect("apply");
    assert_eq!(outcome, [RowOutcome::Stale]);
    assert_eq!(zscore(&env, &keys.scores(&b), "x").await, None);

    // A banned user's command is recorded and applied in PostgreSQL, and stays hidden.
    assert_eq!(add(&env, "b", "x", 7).await, (107, 3));
    drain(&env).await;
    both_paths(&env, "b", &["a", "c", "bo", "d"]).await;
    assert_eq!(
        hget(&env, &keys.tombstones(&b), "x").await.as_deref(),
        Some("3")
    );

    // The same id again: a repeat; with another reason: refused.
    let db = env.database();
    let again = |reason: &str| Command {
        action_id: ban_id,
        action: Action::Ban { user: user("x") },
        reason: reason.into(),
        actor: "someone else".into(),
    };
    let repeat = moderate(&db, &again("aimbot")).await.expect("repeat");
    assert!(repeat.duplicate);
    assert_eq!(repeat.actor, "moderation-test");
    assert_eq!(repeat.result, result);
    assert!(matches!(
        moderate(&db, &again("wallhack")).await,
        Err(ModerationError::IdReused(id)) if id == ban_id
    ));

    // Unban: x is back with its scores (the ban's 100 plus the 7 applied while banned).
    let result = run(
        &env,
        Uuid::new_v4(),
        Action::Unban { user: user("x") },
        "appeal",
    )
    .await;
    assert_eq!(result["entries"], 2, "{result}");
    drain(&env).await;
    let modes = both_paths(&env, "b", &["x", "a", "c", "bo", "d"]).await;
    assert_eq!(
        modes["competition"].0[0],
        (1, "x".into(), 107, "100.000".into())
    );
    assert_eq!(modes["competition"].1, 5);
    both_paths(&env, "w", &["x", "a"]).await;
    assert_eq!(hget(&env, &keys.tombstones(&b), "x").await, None);
    assert_eq!(
        hget(&env, &keys.meta(&b), "card").await.as_deref(),
        Some("5")
    );

    // The audit: who, when (the database clock), why.
    let client = env.database().client().await.expect("client");
    let audit = client
        .query(
            "SELECT action, user_id, reason, actor, at <= now() FROM moderation_actions ORDER BY at",
            &[],
        )
        .await
        .expect("audit");
    let audit: Vec<(String, String, String, String, bool)> = audit
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
    assert_eq!(
        audit,
        [
            (
                "ban".into(),
                "x".into(),
                "aimbot".into(),
                "moderation-test".into(),
                true
            ),
            (
                "unban".into(),
                "x".into(),
                "appeal".into(),
                "moderation-test".into(),
                true
            ),
        ]
    );
}

#[tokio::test]
async fn a_removed_entry_leaves_both_paths_and_a_new_entry_continues_its_version() {
    let env = seeded().await;
    let keys = env.store().keys().clone();
    let b = board("b");
    let result = run(
        &env,
        Uuid::new_v4(),
        Action::Remove {
            board: b.clone(),
            user: user("bo"),
        },
        "test account",
    )
    .await;
    assert_eq!(result["entries"], 1, "{result}");
    drain(&env).await;
    let modes = both_paths(&env, "b", &["x", "a", "c", "d"]).await;
    let dense: Vec<u64> = modes["dense"].0.iter().map(|e| e.0).collect();
    assert_eq!(dense, [1, 2, 3, 4]);
    assert_eq!(
        hget(&env, &keys.tombstones(&b), "bo").await.as_deref(),
        Some("2")
    );
    // c still holds 40: the distinct score stays.
    assert_eq!(zscore(&env, &keys.distinct(&b), "40").await, Some(40.0));
    assert_eq!(
        hget(&env, &keys.meta(&b), "dcard").await.as_deref(),
        Some("4")
    );

    // Removing it again (another id) finds nothing to remove.
    let result = run(
        &env,
        Uuid::new_v4(),
        Action::Remove {
            board: b.clone(),
            user: user("bo"),
        },
        "test account",
    )
    .await;
    assert_eq!(result["entries"], 0, "{result}");

    // A new entry starts from its first score, with a version above the tombstone's.
    assert_eq!(add(&env, "b", "bo", 3).await, (3, 3));
    drain(&env).await;
    both_paths(&env, "b", &["x", "a", "c", "d", "bo"]).await;
    assert_eq!(hget(&env, &keys.tombstones(&b), "bo").await, None);
    assert_eq!(
        hget(&env, &keys.versions(&b), "bo").await.as_deref(),
        Some("3")
    );
}

#[tokio::test]
async fn the_reconciler_removes_a_hidden_member_found_in_redis_and_the_rebuild_leaves_it_out() {
    let env = seeded().await;
    let keys = env.store().keys().clone();
    let b = board("b");
    run(
        &env,
        Uuid::new_v4(),
        Action::Ban { user: user("x") },
        "cheat",
    )
    .await;
    // The rebuild, before the ban's rows are projected: the new generation leaves x out.
    rebuild_board(&env, "b").await;
    assert_eq!(zscore(&env, &keys.scores(&b), "x").await, None);
    drain(&env).await;
    both_paths(&env, "b", &["a", "c", "bo", "d"]).await;

    // x put back by hand (a stray write, a restored dump): drift, seen raw before the pass.
    let mut conn = env.store().connection().await.expect("redis");
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(keys.scores(&b))
        .arg(100)
        .arg("x")
        .ignore()
        .cmd("HSET")
        .arg(keys.versions(&b))
        .arg("x")
        .arg("2")
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("edit");
    assert_eq!(zscore(&env, &keys.scores(&b), "x").await, Some(100.0));
    let report = pass(&env).await;
    assert_eq!(report.totals.orphan, 1, "{report:?}");
    assert_eq!(report.totals.removed, 1, "{report:?}");
    assert_eq!(zscore(&env, &keys.scores(&b), "x").await, None);
    assert_eq!(hget(&env, &keys.versions(&b), "x").await, None);
    // The tombstone stays: a late score of x is still stale.
    assert_eq!(
        hget(&env, &keys.tombstones(&b), "x").await.as_deref(),
        Some("2")
    );
}

/// A board whose every entry is hidden exists and is empty: its rebuild seals it (card 0), and
/// nothing asks for it again. Found by the chaos run: left unsealed, each pass asked
/// for the same rebuild again, every 280 ms for good.
#[tokio::test]
async fn a_board_whose_every_entry_is_hidden_is_rebuilt_sealed_once() {
    let env = TestEnv::new(|_| {}).await;
    add(&env, "hid", "cheater", 5).await;
    run(
        &env,
        Uuid::new_v4(),
        Action::Ban {
            user: user("cheater"),
        },
        "ban",
    )
    .await;
    drain(&env).await;
    // The projector asked for it (its rows met no seal); the rebuild below is that request.
    let store = env.store();
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("DEL")
        .arg(store.keys().rebuild_requests())
        .query_async(&mut conn)
        .await
        .expect("del");
    rebuild_board(&env, "hid").await;
    assert_eq!(
        read::board_seal(&env.store(), &board("hid"))
            .await
            .expect("seal"),
        Seal::Whole
    );
    assert!(
        !requested(&env).await.contains(&"hid".to_owned()),
        "the rebuild left a request for another"
    );
}

/// A pass over a board that has no source row (its only trace in Redis an orphan member written
/// by hand) removes the orphan and asks for no rebuild: nothing would seal it.
#[tokio::test]
async fn a_pass_over_a_board_without_rows_asks_for_no_rebuild() {
    let env = TestEnv::new(|_| {}).await;
    let store = env.store();
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(store.keys().scores(&board("ghost")))
        .arg(7)
        .arg("nobody")
        .ignore()
        .cmd("HSET")
        .arg(store.keys().versions(&board("ghost")))
        .arg("nobody")
        .arg("1")
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("orphan");
    let mut options = common::options(&env);
    options.board = Some(board("ghost"));
    common::reconciler(&env)
        .run_once(&options)
        .await
        .expect("pass");
    assert!(
        !requested(&env).await.contains(&"ghost".to_owned()),
        "a board without rows was asked to be rebuilt"
    );
}
