//! `periods::verify` against the real PostgreSQL: when a moderation is recorded (once its lock
//! is granted, so verify needs no window around it), and the three outcomes of a closed
//! period's verification: it holds, it holds with changes its records explain (an erasure after
//! the close, a ban at the close, a removal), or it does not hold (a row edited by hand).

use std::time::Duration;

use crate::common::{self, Env};
use ledgerboard_core::board::definition::{self, Declaration};
use ledgerboard_core::board::definition::{Operator, Reset};
use ledgerboard_core::board::{self, apply_score_command, moderation, periods};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::Submitted;
use ledgerboard_core::model::{BoardId, UserId};
use ledgerboard_testkit::wait_until;
use serde_json::Number;
use uuid::Uuid;

async fn env() -> Env {
    let env = common::env().await;
    let declaration = Declaration {
        operator: Some(Operator::Add),
        reset: Some(Reset::Manual),
        ..Declaration::default()
    };
    definition::declare(&env.db, &cup(), &declaration)
        .await
        .expect("declare");
    env
}

fn cup() -> BoardId {
    BoardId::parse("cup").expect("board")
}

fn user(name: &str) -> UserId {
    UserId::parse(name).expect("user")
}

impl Env {
    /// One add command on the cup; the period it landed in.
    async fn add_to_cup(&self, name: &str, delta: i64) -> String {
        let def = definition::get(&self.db, &cup()).await.expect("definition");
        let delta = Submitted::One(Number::from(delta));
        let cmd = board::command(
            &def,
            &Uuid::new_v4().to_string(),
            name,
            None,
            Some(&delta),
            None,
        )
        .expect("valid command");
        apply_score_command(&self.db, &cmd, None)
            .await
            .expect("applied")
            .period
            .expect("a period")
    }

    async fn moderate(&self, action: moderation::Action) -> moderation::Moderated {
        moderate_as(&self.db, Uuid::new_v4(), action).await
    }

    /// Ends `period` (a manual reset), projects the outbox by hand (no projector runs here)
    /// and closes it.
    async fn end_and_close(&self, period: &str) -> periods::Closed {
        periods::reset(&self.db, &cup(), "test")
            .await
            .expect("reset");
        wait_until(Duration::from_secs(5), || async {
            periods::current(&self.db, &cup())
                .await
                .expect("periods")
                .expect("resets")
                .current
                != period
        })
        .await
        .expect("the next period opens");
        self.mark_projected().await;
        match periods::close(&self.db, &cup(), period)
            .await
            .expect("close")
        {
            periods::CloseOutcome::Closed(c) => c,
            other => panic!("expected a close, got {other:?}"),
        }
    }

    async fn verify(&self, period: &str) -> periods::Verification {
        periods::verify(&self.db, &cup(), period)
            .await
            .expect("verify")
            .expect("closed")
    }
}

async fn moderate_as(
    db: &Database,
    action_id: Uuid,
    action: moderation::Action,
) -> moderation::Moderated {
    moderation::moderate(
        db,
        &moderation::Command {
            action_id,
            action,
            reason: "test".into(),
            actor: "test".into(),
        },
    )
    .await
    .expect("moderated")
}

/// Whether the RFC 3339 time `a` is at or after `b`, by PostgreSQL.
async fn at_or_after(client: &tokio_postgres::Client, a: &str, b: &str) -> bool {
    client
        .query_one(
            "SELECT $1::text::timestamptz >= $2::text::timestamptz",
            &[&a, &b],
        )
        .await
        .expect("compare")
        .get(0)
}

/// A ban waits for the command in flight (here: a session holding the lock every command's
/// statement takes); its recorded time is when it got the lock, after the holder let go, not
/// its transaction's start before the wait.
#[tokio::test]
async fn a_moderation_is_recorded_once_its_lock_is_granted() {
    let env = env().await;
    env.add_to_cup("ann", 5).await;
    let holder = env.test_db.client().await;
    holder
        .batch_execute("BEGIN; LOCK TABLE user_scores IN ROW EXCLUSIVE MODE")
        .await
        .expect("hold the lock");
    let db = env.db.clone();
    let ban = tokio::spawn(async move {
        moderate_as(
            &db,
            Uuid::new_v4(),
            moderation::Action::Ban { user: user("ann") },
        )
        .await
    });
    env.wait_for_a_lock_wait().await;
    let released: String = holder
        .query_one(
            "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC',
                            'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
            &[],
        )
        .await
        .expect("clock")
        .get(0);
    holder.batch_execute("COMMIT").await.expect("release");
    let ban = ban.await.expect("ban task");
    assert!(
        at_or_after(&env.client, &ban.at, &released).await,
        "the ban is recorded at {}, before the lock it waited for was released at {released}",
        ban.at
    );
    let stored: String = env
        .client
        .query_one(
            "SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')
             FROM moderation_actions WHERE action_id = $1",
            &[&ban.action_id],
        )
        .await
        .expect("audit row")
        .get(0);
    assert_eq!(stored, ban.at, "the audit row holds the time answered");
}

/// A command that commits while a ban waits (here: on its audit row, which another session
/// holds) has a later time than the ban's transaction start, yet the ban re-versions its entry
/// after it. With the ban recorded when it took effect, verify counts it between that event and
/// the close without any window, and the standings hold.
#[tokio::test]
async fn a_command_committed_during_a_bans_wait_is_judged_without_a_window() {
    let env = env().await;
    let period = env.add_to_cup("ann", 5).await;
    let action_id = Uuid::new_v4();
    let holder = env.test_db.client().await;
    holder
        .batch_execute(&format!(
            "BEGIN; INSERT INTO moderation_actions (action_id, action, user_id, reason, actor, digest)
             VALUES ('{action_id}', 'ban', 'ann', 'held', 'test', '\\x00')"
        ))
        .await
        .expect("hold the audit row");
    let db = env.db.clone();
    let ban = tokio::spawn(async move {
        moderate_as(
            &db,
            action_id,
            moderation::Action::Ban { user: user("ann") },
        )
        .await
    });
    env.wait_for_a_lock_wait().await;
    // ann scores while the ban waits: version 2, an event later than the ban's start.
    assert_eq!(env.add_to_cup("ann", 1).await, period);
    holder.batch_execute("ROLLBACK").await.expect("release");
    let ban = ban.await.expect("ban task");
    assert_eq!(ban.result["entries"], 1, "{:?}", ban.result);
    // Unbanned again before the close: her frozen row is at version 4 (ban 3, unban 4), two
    // above her newest event's, explained by the ban and the unban.
    env.moderate(moderation::Action::Unban { user: user("ann") })
        .await;
    env.add_to_cup("bob", 3).await;
    env.end_and_close(&period).await;
    let v = env.verify(&period).await;
    assert_eq!(
        (v.agree, v.disagree, v.outcome()),
        (2, 0, periods::Outcome::Holds),
        "{v:?}"
    );
}

/// A ban just before the close and a removal leave their users out, explained; an erasure after
/// the close re-keys a row and re-seals the digest, so the standings still hold with the changes
/// counted; a frozen row edited by hand after that does not hold, and neither does one edited
/// before an erasure (the erasure's re-seal found it).
#[tokio::test]
async fn explained_changes_hold_and_hand_edits_do_not() {
    let env = env().await;
    let period = env.add_to_cup("ann", 30).await;
    for (name, delta) in [("bob", 20), ("cid", 10), ("dan", 5), ("eve", 1)] {
        env.add_to_cup(name, delta).await;
    }
    let in_period = cup().in_period(&period).expect("period board");
    env.moderate(moderation::Action::Remove {
        board: in_period,
        user: user("dan"),
    })
    .await;
    // Banned right before the close: left out of the standings, and explained by the ban.
    env.moderate(moderation::Action::Ban { user: user("eve") })
        .await;
    let closed = env.end_and_close(&period).await;
    assert_eq!(closed.entries, 3);
    let v = env.verify(&period).await;
    assert_eq!(
        (
            v.outcome(),
            v.left_out,
            v.left_out_banned,
            v.left_out_removed,
            v.left_out_unexplained
        ),
        (periods::Outcome::HoldsWithExplainedChanges, 2, 1, 1, 0),
        "{v:?}"
    );

    // ann is erased (right to erasure): her frozen row carries a pseudonym, and the erasure
    // re-sealed the digest over the rows it left, having checked the old seal.
    let erased = env
        .moderate(moderation::Action::Erase { user: user("ann") })
        .await;
    assert_eq!(
        (
            &erased.result["periods_resealed"],
            &erased.result["periods_mismatched"]
        ),
        (&serde_json::json!(1), &serde_json::json!(0)),
        "{:?}",
        erased.result
    );
    let v = env.verify(&period).await;
    assert_eq!(
        (
            v.outcome(),
            v.digest_matches,
            v.erased,
            v.resealed,
            v.agree,
            v.disagree
        ),
        (
            periods::Outcome::HoldsWithExplainedChanges,
            true,
            1,
            1,
            3,
            0
        ),
        "{v:?}"
    );
    assert!(
        v.describe()
            .starts_with("holds with explained changes: digest matches"),
        "{}",
        v.describe()
    );

    // A frozen score edited by hand after the erasure: the digest and the events disagree.
    env.client
        .execute(
            "UPDATE period_standings SET score = 25 WHERE user_id = 'bob'",
            &[],
        )
        .await
        .expect("tamper");
    let v = env.verify(&period).await;
    assert_eq!(
        (v.outcome(), v.digest_matches, v.disagree),
        (periods::Outcome::DoesNotHold, false, 1),
        "{v:?}"
    );

    // The score and its event both edited by hand (the events agree again), then cid erased:
    // the erasure's re-seal finds the rows not matching the seal before it, so the new seal
    // cannot launder the edit.
    env.client
        .execute(
            "UPDATE score_events SET score = 25 WHERE user_id = 'bob' AND board_id LIKE 'cup~%'",
            &[],
        )
        .await
        .expect("tamper the event");
    env.moderate(moderation::Action::Erase { user: user("cid") })
        .await;
    let v = env.verify(&period).await;
    assert_eq!(
        (
            v.outcome(),
            v.digest_matches,
            v.disagree,
            v.resealed,
            v.reseals_broken
        ),
        (periods::Outcome::DoesNotHold, true, 0, 2, 1),
        "{v:?}"
    );
}

/// A frozen row deleted by hand: fewer rows than the close wrote, a user left out whom no
/// record explains.
#[tokio::test]
async fn a_row_left_out_with_no_record_does_not_hold() {
    let env = env().await;
    let period = env.add_to_cup("ann", 30).await;
    env.add_to_cup("bob", 20).await;
    env.end_and_close(&period).await;
    assert_eq!(env.verify(&period).await.outcome(), periods::Outcome::Holds);
    env.client
        .execute("DELETE FROM period_standings WHERE user_id = 'bob'", &[])
        .await
        .expect("tamper");
    let v = env.verify(&period).await;
    assert_eq!(
        (v.outcome(), v.left_out, v.left_out_unexplained),
        (periods::Outcome::DoesNotHold, 1, 1),
        "{v:?}"
    );
}
