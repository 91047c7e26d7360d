//! Grouped commits (`board/group.rs`) against the real PostgreSQL: commands queued behind a
//! busy worker leave as one transaction (one xmin), each with its own answer; a statement that
//! fails rolls its group back and every command runs again alone, once; many clients on
//! shared users, new members and several boards at once end exactly where the commands add up
//! to, with the entry counts (V10: counted per statement, never waiting) right.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::{Env, env, lock_waits};
use ledgerboard_core::board::ScoreCommand;
use ledgerboard_core::board::group::CommandGroups;
use ledgerboard_core::db::StoreError;
use ledgerboard_core::model::{BoardId, CommandOutcome, Delta, EventId, UserId};
use ledgerboard_testkit::wait_until;
use uuid::Uuid;

fn add(event: Uuid, board: &str, user: &str, delta: i64) -> ScoreCommand {
    ScoreCommand::add(
        EventId::from(event),
        BoardId::parse(board).expect("board"),
        UserId::parse(user).expect("user"),
        Delta::new(delta).expect("delta"),
    )
}

impl Env {
    /// Holds `user`'s row of `board` locked from another session until the returned
    /// transaction ends: a command of that user then waits, and so does the worker running it.
    async fn hold_row(&mut self, board: &str, user: &str) -> tokio_postgres::Transaction<'_> {
        let tx = self.client.transaction().await.expect("begin");
        tx.execute(
            "SELECT 1 FROM user_scores WHERE board_id = $1 AND user_id = $2 FOR UPDATE",
            &[&board, &user],
        )
        .await
        .expect("lock");
        tx
    }

    async fn xmins(&self, events: &[Uuid]) -> Vec<String> {
        self.client
            .query(
                "SELECT DISTINCT xmin::text FROM score_events WHERE event_id = ANY($1)",
                &[&events],
            )
            .await
            .expect("xmin")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }
}

/// Runs `commands` concurrently through `groups` once the one worker is busy with a blocked
/// command, so that they queue and leave as one group when the block ends.
async fn as_one_group(
    env: &mut Env,
    groups: &CommandGroups,
    commands: Vec<ScoreCommand>,
) -> Vec<Result<CommandOutcome, StoreError>> {
    let blocker = Uuid::new_v4();
    let n = commands.len();
    // The blocker's row must exist to be locked.
    ledgerboard_core::board::apply_score_command(
        &env.db,
        &add(Uuid::new_v4(), "g", "blocker", 1),
        None,
    )
    .await
    .expect("blocker row");
    let watcher = env.test_db.client().await;
    let tx = env.hold_row("g", "blocker").await;
    let busy = tokio::spawn({
        let groups = groups.clone();
        async move {
            groups
                .apply(vec![add(blocker, "g", "blocker", 1)], None)
                .await
        }
    });
    // The worker has taken the blocker once nothing is queued.
    wait_until(Duration::from_secs(10), || async { groups.queued() == 0 })
        .await
        .expect("the worker took the blocker");
    // And its statement waits on the held row.
    lock_waits(&watcher, 1).await;
    let mut handles = Vec::new();
    for cmd in commands {
        let mine = groups.clone();
        handles.push(tokio::spawn(
            async move { mine.apply(vec![cmd], None).await },
        ));
        // One after another, so that the queue keeps their order.
        wait_until(Duration::from_secs(10), || async {
            groups.queued() == handles.len()
        })
        .await
        .expect("queued");
    }
    assert_eq!(groups.queued(), n);
    tx.rollback().await.expect("release");
    busy.await.expect("blocker").expect("blocker applied");
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("command task").map_err(|r| r.error));
    }
    out
}

#[tokio::test]
async fn a_group_commits_once_and_answers_each_command_as_alone() {
    let mut env = env().await;
    let groups = CommandGroups::start(env.db.clone(), 1, 64);

    let (a1, a2, a3, b1, reused) = (
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
    );
    let mut out_of_range = add(Uuid::new_v4(), "g", "carol", 40);
    out_of_range.max_score = 10;
    let commands = vec![
        // Alice three times, then her first event again; Bob in between; a reuse of Bob's
        // event id for another user; a score past the board's bounds.
        add(a1, "g", "alice", 5),
        add(b1, "g", "bob", 7),
        add(a2, "g", "alice", 6),
        add(a3, "g", "alice", -2),
        add(a1, "g", "alice", 5),
        add(b1, "g", "dave", 7),
        add(reused, "g", "erin", 1),
        out_of_range,
        add(reused, "g", "erin", 2),
    ];
    let out = as_one_group(&mut env, &groups, commands).await;

    let ok = |i: usize| out[i].as_ref().expect("answered").clone();
    // Alice's versions follow her commands' order of arrival.
    assert_eq!((ok(0).score, ok(0).version, ok(0).duplicate), (5, 1, false));
    assert_eq!((ok(2).score, ok(2).version), (11, 2));
    assert_eq!((ok(3).score, ok(3).version), (9, 3));
    // Her first event again, in the same group: a repeat, with the first answer.
    assert_eq!((ok(4).score, ok(4).version, ok(4).duplicate), (5, 1, true));
    assert_eq!((ok(1).score, ok(1).duplicate), (7, false));
    assert!(
        matches!(out[5], Err(StoreError::EventIdReused(_))),
        "{:?}",
        out[5]
    );
    assert_eq!((ok(6).score, ok(6).duplicate), (1, false));
    assert!(
        matches!(out[7], Err(StoreError::ScoreOutOfRange)),
        "{:?}",
        out[7]
    );
    assert!(
        matches!(out[8], Err(StoreError::EventIdReused(_))),
        "{:?}",
        out[8]
    );
    // One transaction wrote every event of the group.
    let xmins = env.xmins(&[a1, a2, a3, b1, reused]).await;
    assert_eq!(
        xmins.len(),
        1,
        "the group's events were written by {xmins:?}"
    );
    let alice: (i64, i64) = {
        let r = env
            .client
            .query_one(
                "SELECT score, version FROM user_scores WHERE board_id = 'g' AND user_id = 'alice'",
                &[],
            )
            .await
            .expect("alice");
        (r.get(0), r.get(1))
    };
    assert_eq!(alice, (9, 3));
}

#[tokio::test]
async fn a_failing_statement_rolls_its_group_back_and_the_others_apply_alone_once() {
    let mut env = env().await;
    // A statement that fails for one user, whichever way it runs: an error from inside the
    // statement, as a lost race or a timeout would be.
    env.client
        .batch_execute(
            "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.user_id = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER poison BEFORE INSERT ON score_events
                 FOR EACH ROW EXECUTE FUNCTION poison();",
        )
        .await
        .expect("poison");
    let groups = CommandGroups::start(env.db.clone(), 1, 64);
    let events: Vec<Uuid> = (0..6).map(|_| Uuid::new_v4()).collect();
    let mut commands: Vec<ScoreCommand> = events
        .iter()
        .enumerate()
        .map(|(i, e)| add(*e, "g", &format!("user-{}", i % 3), 10))
        .collect();
    commands.insert(3, add(Uuid::new_v4(), "g", "poison", 1));
    let out = as_one_group(&mut env, &groups, commands).await;

    assert!(
        matches!(out[3], Err(StoreError::Internal(_))),
        "{:?}",
        out[3]
    );
    let applied: Vec<&CommandOutcome> = out
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, o)| o.as_ref().expect("applied alone"))
        .collect();
    assert!(applied.iter().all(|o| !o.duplicate), "{applied:?}");
    // Each applied once: two commands of 10 per user, versions 1 and 2.
    let rows = env
        .client
        .query(
            "SELECT user_id, score, version FROM user_scores
             WHERE board_id = 'g' AND user_id LIKE 'user-%' ORDER BY user_id",
            &[],
        )
        .await
        .expect("rows");
    let got: Vec<(String, i64, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let want: Vec<(String, i64, i64)> = (0..3).map(|i| (format!("user-{i}"), 20, 2)).collect();
    assert_eq!(got, want);
    // Alone: each in a transaction of its own.
    assert_eq!(env.xmins(&events).await.len(), events.len());
    let outbox: i64 = env
        .client
        .query_one(
            "SELECT count(*) FROM leaderboard_outbox WHERE event_id = ANY($1)",
            &[&events],
        )
        .await
        .expect("outbox")
        .get(0);
    assert_eq!(outbox, events.len() as i64);
}

#[tokio::test]
async fn many_clients_on_shared_users_and_new_members_add_up_without_deadlocks() {
    let env = env().await;
    let groups = CommandGroups::start(env.db.clone(), 4, 32);
    let boards = ["m1", "m2", "m3"];
    let clients = 48;
    let per_client = 40;
    let started = std::time::Instant::now();
    let mut handles = Vec::new();
    for c in 0..clients {
        let groups = groups.clone();
        handles.push(tokio::spawn(async move {
            let mut sent = Vec::new();
            for i in 0..per_client {
                // Shared users (each is written by many clients), new members all along, and
                // each client's commands spread over the boards.
                let user = format!("u{}", (c * 7 + i * 13) % 150);
                let board = boards[(c + i) % boards.len()];
                let delta = ((c * 31 + i) % 21) as i64 - 5;
                let event = Uuid::new_v4();
                let out = groups
                    .apply(vec![add(event, board, &user, delta)], None)
                    .await
                    .expect("applied");
                assert!(!out.duplicate);
                sent.push((board, user, delta));
            }
            sent
        }));
    }
    let mut want: HashMap<(String, String), (i64, i64)> = HashMap::new();
    for h in handles {
        for (board, user, delta) in h.await.expect("client") {
            let e = want.entry((board.to_owned(), user)).or_default();
            e.0 += delta;
            e.1 += 1;
        }
    }
    eprintln!(
        "{} commands in {:?}",
        clients * per_client,
        started.elapsed()
    );
    // A deadlock between groups costs a second (deadlock_timeout) and fails a group, whose
    // commands then run alone: the sums below would still hold, so count them. A session's
    // statistics reach pg_stat_database when it ends (an idle one's only within a second): end
    // the pool's sessions and wait until they are gone, then read.
    drop(groups);
    env.client
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .expect("end the pool's sessions");
    wait_until(Duration::from_secs(10), || async {
        let others: i64 = env
            .client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .expect("sessions")
            .get(0);
        others == 0
    })
    .await
    .expect("the pool's sessions end within 10 s");
    let deadlocks: i64 = env
        .client
        .query_one(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await
        .expect("deadlocks")
        .get(0);
    assert_eq!(deadlocks, 0, "deadlocks between groups");
    let rows = env
        .client
        .query(
            "SELECT board_id, user_id, score, version FROM user_scores",
            &[],
        )
        .await
        .expect("rows");
    let got: HashMap<(String, String), (i64, i64)> = rows
        .iter()
        .map(|r| ((r.get(0), r.get(1)), (r.get(2), r.get(3))))
        .collect();
    assert_eq!(got, want);
    // Entries per board (V10: any count row no other transaction holds): the sum is exact.
    for board in boards {
        let counted: i64 = env
            .client
            .query_one(
                "SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1",
                &[&board],
            )
            .await
            .expect("count")
            .get(0);
        let members = want.keys().filter(|(b, _)| b == board).count() as i64;
        assert_eq!(counted, members, "entries of {board}");
    }
    let events: i64 = env
        .client
        .query_one(
            "SELECT count(*) FROM score_events WHERE board_id = ANY($1)",
            &[&boards.to_vec()],
        )
        .await
        .expect("events")
        .get(0);
    assert_eq!(events as usize, clients * per_client);
}
