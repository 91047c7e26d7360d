//! periods: boundaries.

use super::*;

#[tokio::test]
async fn commands_land_in_the_period_open_when_their_statement_runs() {
    let env = env().await;
    // A board that never resets keeps its plain id and its commands name no period.
    let plain = env.add_delta("plain", "ann", 5).await;
    assert_eq!(plain.period, None);
    assert_eq!(env.entries_of("plain").await.len(), 1);

    env.declare_resetting("season", Reset::Manual, "UTC").await;
    let first = periods::current(&env.db, &board("season"))
        .await
        .expect("periods")
        .expect("season resets");
    assert_eq!(
        first.previous, None,
        "a manual board starts with one period"
    );
    assert_eq!(first.ends_in_ms, None);
    let a = env.add_delta("season", "ann", 10).await;
    assert_eq!(a.period.as_deref(), Some(first.current.as_str()));
    let b = env.add_delta("season", "ann", 7).await;
    assert_eq!((b.score, b.version), (17, 2));

    // A reset opens the next period at the next whole second.
    let reset = periods::reset(&env.db, &board("season"), "test")
        .await
        .expect("reset")
        .expect("season resets");
    assert!(reset.opened && reset.period > first.current, "{reset:?}");
    let again = periods::reset(&env.db, &board("season"), "test")
        .await
        .expect("reset")
        .expect("season resets");
    assert!(
        !again.opened || again.period > reset.period,
        "a second reset in the same second opens nothing: {again:?}"
    );
    // Wait until the new period is open by the database clock.
    wait_until(Duration::from_secs(5), || async {
        env.current("season").await.current >= reset.period
    })
    .await
    .expect("the reset's period opens");
    let second = env.current("season").await;
    assert_eq!(second.previous.as_deref(), Some(first.current.as_str()));
    let c = env.add_delta("season", "ann", 3).await;
    let third = c.period.clone().expect("a period");
    assert!(third >= reset.period, "{third} before {}", reset.period);
    // A new period is a new entry: ann starts over there, and the old period keeps 17.
    assert_eq!((c.score, c.version), (3, 1));
    let old = format!("season~{}", first.current);
    let new = format!("season~{third}");
    assert_eq!(env.entries_of(&old).await["ann"], (17, 2));
    assert_eq!(env.entries_of(&new).await["ann"], (3, 1));
    assert!(
        env.entries_of("season").await.is_empty(),
        "nothing lands on the board itself"
    );
    // Each event and outbox row names the period its command landed in.
    let events: Vec<String> = env
        .client
        .query(
            "SELECT e.board_id FROM score_events e JOIN leaderboard_outbox o USING (event_id)
             WHERE e.board_id = o.board_id AND e.board_id LIKE 'season~%'
             ORDER BY e.created_at",
            &[],
        )
        .await
        .expect("events")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(events, [old.clone(), old, new]);

    // The rule of a board with entries (in any of its periods) does not change.
    let changed = definition::update(
        &env.db,
        &board("season"),
        &Declaration {
            reset: Some(Reset::Daily),
            ..Declaration::default()
        },
    )
    .await;
    assert!(
        matches!(changed, Err(definition::DefineError::HasEntries { .. })),
        "{changed:?}"
    );
}

#[tokio::test]
async fn commands_across_real_boundaries_each_land_in_one_period_and_a_closed_one_stays_closed() {
    let env = env().await;
    env.declare_resetting("rounds", Reset::Every(1), "UTC")
        .await;
    let db = Arc::new(env.db.clone());
    let stop = Instant::now() + Duration::from_millis(3_200);
    let mut tasks = Vec::new();
    for w in 0..6 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut n = 0;
            while Instant::now() < stop {
                let before = now_secs();
                let outcome = add(&db, "rounds", &format!("u{w}-{}", n % 3), 1).await;
                let after = now_secs();
                seen.push((before, after, outcome));
                n += 1;
            }
            seen
        }));
    }

    // Once a boundary has passed, hold the board's period lock exclusively (as a close does):
    // from then on, no command may add to the period that ended.
    let ended = std::cell::RefCell::new(None);
    wait_until(Duration::from_secs(3), || async {
        if let Some(previous) = env.current("rounds").await.previous
            && env.entries_of(&format!("rounds~{previous}")).await.len() > 1
        {
            *ended.borrow_mut() = Some(previous);
        }
        ended.borrow().is_some()
    })
    .await;
    let ended = ended
        .into_inner()
        .expect("a period with entries ended while commands ran");
    let ended_board = format!("rounds~{ended}");
    let count = "SELECT count(*), coalesce(sum(version), 0)::bigint FROM user_scores
                 WHERE board_id = $1";
    let mut close = env.db.client().await.expect("client");
    let tx = close.transaction().await.expect("begin");
    tx.execute(
        "SELECT pg_advisory_xact_lock(lb_period_lock_key('rounds'))",
        &[],
    )
    .await
    .expect("lock");
    let at_close: (i64, i64) = {
        let r = tx.query_one(count, &[&ended_board]).await.expect("count");
        (r.get(0), r.get(1))
    };
    tx.commit().await.expect("commit");
    // Commands go on for a while after the close.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let later = env
        .client
        .query_one(count, &[&ended_board])
        .await
        .expect("count");
    assert_eq!(
        (later.get::<_, i64>(0), later.get::<_, i64>(1)),
        at_close,
        "a command landed in period {ended} after its close held the lock"
    );

    let mut commands = 0;
    let mut periods_seen = std::collections::BTreeSet::new();
    for task in tasks {
        for (before, after, outcome) in task.await.expect("writer") {
            commands += 1;
            let period = outcome.period.expect("every command names its period");
            // The period is the 1-second period of an instant between the send and the answer
            // (the database and the test share this machine's clock).
            let earliest = period_id(before.floor() as i64);
            let latest = period_id(after.floor() as i64);
            assert!(
                earliest <= period && period <= latest,
                "sent at {before}, answered at {after}, landed in {period}"
            );
            periods_seen.insert(period);
        }
    }
    assert!(periods_seen.len() >= 3, "{periods_seen:?}");
    // Each command's effect is in exactly one period: the versions summed over every period
    // are the commands.
    let versions: i64 = env
        .client
        .query_one(
            "SELECT coalesce(sum(version), 0)::bigint FROM user_scores
             WHERE board_id > 'rounds~' AND board_id < 'rounds~~'",
            &[],
        )
        .await
        .expect("versions")
        .get(0);
    assert_eq!(versions, commands);
}

#[tokio::test]
async fn a_close_waits_for_the_command_in_flight_across_the_boundary() {
    let env = env().await;
    // A scheduled boundary: a manual reset waits for the commands in flight (it takes the
    // period lock: a_manual_reset_waits_for_the_command_in_flight), a schedule does not.
    env.declare_resetting("season", Reset::Every(4), "UTC")
        .await;
    // Start just after a boundary, so that the two commands below read clocks in one period.
    let wait = 4.0 - now_secs().rem_euclid(4.0) + 0.1;
    tokio::time::sleep(Duration::from_secs_f64(wait)).await;
    let first = env
        .add_delta("season", "ann", 10)
        .await
        .period
        .expect("period");
    let old = format!("season~{first}");

    // Hold ann's row so that her next command reads the clock (in the first period) and then
    // waits, in flight, across the boundary.
    let mut holder = env.db.client().await.expect("client");
    let hold = holder.transaction().await.expect("begin");
    hold.execute(
        "SELECT 1 FROM user_scores WHERE board_id = $1 AND user_id = 'ann' FOR UPDATE",
        &[&old],
    )
    .await
    .expect("hold the row");
    let db = env.db.clone();
    let in_flight = tokio::spawn(async move { add(&db, "season", "ann", 5).await });
    env.wait_for_a_lock_wait().await;
    assert!(
        !in_flight.is_finished(),
        "the command should wait for the row"
    );

    wait_until(Duration::from_secs(6), || async {
        env.current("season").await.current > first
    })
    .await
    .expect("the next period opens");

    // The first period has ended. Its close takes the period lock exclusively: it must wait
    // for the command still in flight in it.
    let db = env.db.clone();
    let closing_board = old.clone();
    let close = tokio::spawn(async move {
        let mut client = db.client().await.expect("client");
        let tx = client.transaction().await.expect("begin");
        tx.execute(
            "SELECT pg_advisory_xact_lock(lb_period_lock_key('season'))",
            &[],
        )
        .await
        .expect("lock");
        let version: i64 = tx
            .query_one(
                "SELECT version FROM user_scores WHERE board_id = $1 AND user_id = 'ann'",
                &[&closing_board],
            )
            .await
            .expect("ann")
            .get(0);
        tx.commit().await.expect("commit");
        version
    });
    env.wait_for_lock_waits(2).await;
    assert!(
        !close.is_finished(),
        "the close took the lock while a command of its period was in flight"
    );
    hold.commit().await.expect("release the row");
    let landed = in_flight.await.expect("command");
    assert_eq!(landed.period.as_deref(), Some(first.as_str()));
    assert_eq!((landed.score, landed.version), (15, 2));
    assert_eq!(
        close.await.expect("close"),
        2,
        "the close saw the late command"
    );
}

/// A manual reset writes its boundary under the period lock: a command holding it (reading the
/// clock, not yet committed) finishes first.
#[tokio::test]
async fn a_manual_reset_waits_for_the_command_in_flight() {
    let mut env = env().await;
    env.declare_resetting("season", Reset::Manual, "UTC").await;
    let tx = env.client.transaction().await.expect("tx");
    tx.execute(
        "SELECT pg_advisory_xact_lock_shared(lb_period_lock_key('season'))",
        &[],
    )
    .await
    .expect("shared lock");
    let db = env.db.clone();
    let reset = tokio::spawn(async move {
        periods::reset(&db, &board("season"), "test")
            .await
            .expect("reset")
    });
    lock_waits(&env.test_db.client().await, 1).await;
    assert!(
        !reset.is_finished(),
        "the reset must wait for the command in flight"
    );
    tx.commit().await.expect("commit");
    let done = tokio::time::timeout(Duration::from_secs(5), reset)
        .await
        .expect("the reset goes once the command committed")
        .expect("joined");
    assert!(done.is_some_and(|r| r.opened));
}
