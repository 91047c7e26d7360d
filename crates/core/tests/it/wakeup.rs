//! The projectors' wake-up: commands no longer NOTIFY inside their transaction; the database
//! handle sends coalesced notifications after they commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ledgerboard_core::board::ScoreCommand;
use ledgerboard_core::board::apply_score_command;
use ledgerboard_core::config::{Count, DatabaseSettings, Millis};
use ledgerboard_core::db::wakeup::OUTBOX_CHANNEL;
use ledgerboard_core::db::{Database, migrate};
use ledgerboard_core::model::{BoardId, Delta, EventId, UserId};
use ledgerboard_testkit::{TestDb, wait_until};
use tokio_postgres::{AsyncMessage, NoTls};

/// LISTENs on the outbox channel and counts what arrives.
async fn listen(url: &str) -> (tokio_postgres::Client, Arc<AtomicU64>) {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    let count = Arc::new(AtomicU64::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Some(Ok(message)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(n) = message {
                assert_eq!(n.channel(), OUTBOX_CHANNEL);
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {}", OUTBOX_CHANNEL))
        .await
        .expect("listen");
    (client, count)
}

fn command(user: u32) -> ScoreCommand {
    ScoreCommand::add(
        EventId::from(uuid::Uuid::new_v4()),
        BoardId::parse("wake").expect("board"),
        UserId::parse(&format!("u{user}")).expect("user"),
        Delta::new(1).expect("delta"),
    )
}

async fn wait_for(count: &AtomicU64, at_least: u64) -> bool {
    wait_until(Duration::from_secs(2), || async {
        count.load(Ordering::SeqCst) >= at_least
    })
    .await
    .is_some()
}

/// How long a notification that should not come is waited for. A fixed window on purpose:
/// "nothing arrives" has no condition to wait on.
const QUIET: Duration = Duration::from_millis(100);

#[tokio::test]
async fn commands_wake_the_projectors_with_coalesced_notifications() {
    let test_db = TestDb::create().await;
    let settings = DatabaseSettings {
        url: test_db.url.as_str().into(),
        pool_max_size: Count::of(20),
        ..DatabaseSettings::default()
    };
    migrate(&settings).await.expect("migrate");
    let (_listener, count) = listen(&test_db.url).await;
    let db = Database::connect(&settings, "wakeup-test").expect("pool");

    // One command: one notification, after its commit.
    apply_score_command(&db, &command(0), None)
        .await
        .expect("command");
    assert!(wait_for(&count, 1).await, "no notification after a command");

    // A repeat writes nothing and wakes nobody.
    let repeat = command(1);
    apply_score_command(&db, &repeat, None)
        .await
        .expect("first");
    assert!(wait_for(&count, 2).await);
    // A late extra notification of the first command must not count against the repeat.
    tokio::time::sleep(QUIET).await;
    let before = count.load(Ordering::SeqCst);
    let outcome = apply_score_command(&db, &repeat, None)
        .await
        .expect("repeat");
    assert!(outcome.duplicate);
    // The window in which the duplicate's notification would arrive: the sleep is the test.
    tokio::time::sleep(QUIET).await;
    assert_eq!(count.load(Ordering::SeqCst), before, "a duplicate notified");

    // Many commands at once: far fewer notifications than commands.
    let commands = 400;
    let mut tasks = Vec::new();
    for worker in 0..16 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            for i in (worker..commands).step_by(16) {
                apply_score_command(&db, &command(i + 10), None)
                    .await
                    .expect("command");
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
    assert!(
        wait_for(&count, before + 1).await,
        "400 commands woke nobody"
    );
    // Then the window for any further ones, which the upper bound counts.
    tokio::time::sleep(QUIET).await;
    let sent = count.load(Ordering::SeqCst) - before;
    assert!(
        (1..u64::from(commands) / 2).contains(&sent),
        "{sent} notifications for {commands} commands"
    );
}

/// Sends `signal` (`STOP`, `CONT`) to a process of this machine's PostgreSQL.
fn signal(signal: &str, pid: i32) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// A backend stopped (SIGSTOP) until this is dropped, so that a failing assertion never leaves
/// it stopped.
struct Stopped(i32);

impl Stopped {
    fn new(pid: i32) -> Self {
        signal("STOP", pid);
        Self(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal("CONT", self.0);
    }
}

#[tokio::test]
async fn a_wakeup_without_an_answer_is_cancelled_and_its_connection_leaves_the_pool() {
    let test_db = TestDb::create().await;
    // One connection, so the command and the wake-up share it; a round trip bound of 1.2 s.
    let settings = DatabaseSettings {
        url: test_db.url.as_str().into(),
        pool_max_size: Count::of(1),
        statement_timeout_ms: Millis::of(200),
        ..DatabaseSettings::default()
    };
    migrate(&settings).await.expect("migrate");
    let (_listener, count) = listen(&test_db.url).await;
    let db = Database::connect(&settings, "wakeup-stopped").expect("pool");
    apply_score_command(&db, &command(0), None)
        .await
        .expect("command");
    assert!(wait_for(&count, 1).await, "no notification after a command");
    let admin = test_db.client().await;
    let pid: i32 = admin
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'wakeup-stopped'",
            &[],
        )
        .await
        .expect("the pool's one backend")
        .get(0);
    assert_eq!(db.status().size, 1);

    // The backend stops answering (a hung server, as the wake-up sees it) and the projectors
    // are woken: the NOTIFY runs into the bound, is cancelled, and its connection is not
    // handed to the next command.
    let stopped = Stopped::new(pid);
    db.wake_projectors();
    let left = wait_until(Duration::from_secs(10), || async { db.status().size == 0 }).await;
    drop(stopped);
    assert!(
        left.is_some(),
        "the unanswered NOTIFY's connection went back to the pool"
    );
    // The next command gets a connection of its own and goes through.
    apply_score_command(&db, &command(1), None)
        .await
        .expect("a command after the hung wake-up");
    // And the stopped backend's session ends once it runs again (cancelled, its client gone).
    let gone = wait_until(Duration::from_secs(10), || async {
        let pids: Vec<i32> = admin
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'wakeup-stopped'",
                &[],
            )
            .await
            .expect("backends")
            .iter()
            .map(|r| r.get(0))
            .collect();
        !pids.contains(&pid)
    })
    .await;
    assert!(gone.is_some(), "the stopped backend {pid} still runs");
}
