//! The event log's moderation and review kinds (migration V20, docs/api.md "Events"): each
//! written in the transaction of the decision it reports, once per decision, one per declared
//! board a moderation changed (its periods listed), none for a repeat, a refusal or an action
//! that changed nothing; and an erasure leaves no trace of the user in the log.

use std::time::Duration;

use crate::common::{Env, env};
use crate::events_kinds::{board, derived, logged, next_period, post};
use ledgerboard_core::board::definition::{
    self, Declaration, Definitions, Operator, Reset, ReviewRules,
};
use ledgerboard_core::board::group::CommandGroups;
use ledgerboard_core::board::guard::review::{self, DecideError};
use ledgerboard_core::board::moderation::{self, Action, Command, ModerationError};
use ledgerboard_core::board::{Fields, Writer, periods, submit};
use ledgerboard_core::events::{Event, Kind};
use ledgerboard_core::model::{EventId, Submitted, UserId};
use serde_json::json;
use uuid::Uuid;

async fn declare(env: &Env, name: &str, reset: Reset, review: Option<ReviewRules>) {
    definition::declare(
        &env.db,
        &board(name),
        &Declaration {
            operator: Some(Operator::Best),
            reset: Some(reset),
            review: Some(review),
            ..Declaration::default()
        },
    )
    .await
    .expect("declare");
}

fn command(id: Uuid, action: Action, reason: &str) -> Command {
    Command {
        action_id: id,
        action,
        reason: reason.into(),
        actor: "ops".into(),
    }
}

async fn moderate(env: &Env, cmd: &Command) -> Result<moderation::Moderated, ModerationError> {
    moderation::moderate(&env.db, cmd).await
}

/// Every moderation event, as (kind, board, user, entries, periods).
async fn moderation_events(env: &Env) -> Vec<Event> {
    let mut all = Vec::new();
    for kind in [
        Kind::ModerationRemoved,
        Kind::ModerationBanned,
        Kind::ModerationUnbanned,
        Kind::ModerationErased,
    ] {
        all.extend(logged(env, kind).await);
    }
    all.sort_by_key(|e| e.position);
    all
}

fn user(u: &str) -> UserId {
    UserId::parse(u).expect("user")
}

#[tokio::test]
async fn each_moderation_is_one_event_per_board_it_changed_and_an_erasure_leaves_no_trace() {
    let env = env().await;
    declare(&env, "m1", Reset::Never, None).await;
    declare(&env, "m2", Reset::Manual, None).await;
    post(&env, "m1", "ann", "5").await;
    post(&env, "m1", "bob", "7").await;
    post(&env, "m2", "ann", "9").await;
    post(&env, "m2", "bob", "3").await;
    let p1 = periods::current(&env.db, &board("m2"))
        .await
        .expect("periods")
        .expect("resets")
        .current;

    // A removal: one event; its repeat, the same removal under a new id (no entry left), a
    // reuse of its id and a refused reason: none.
    let remove = command(
        Uuid::new_v4(),
        Action::Remove {
            board: board("m1"),
            user: user("ann"),
        },
        "spam",
    );
    moderate(&env, &remove).await.expect("removed");
    assert!(moderate(&env, &remove).await.expect("repeat").duplicate);
    let again = command(Uuid::new_v4(), remove.action.clone(), "spam");
    moderate(&env, &again).await.expect("nothing to remove");
    let reused = command(remove.action_id, remove.action.clone(), "other");
    assert!(matches!(
        moderate(&env, &reused).await,
        Err(ModerationError::IdReused(_))
    ));
    let unreasoned = command(Uuid::new_v4(), Action::Ban { user: user("ann") }, " ");
    assert!(matches!(
        moderate(&env, &unreasoned).await,
        Err(ModerationError::InvalidReason)
    ));
    let events = moderation_events(&env).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(
        e.id,
        derived(&env, &format!("moderation.removed:{}:m1", remove.action_id)).await
    );
    assert_eq!(
        (e.kind.as_str(), e.board.as_str()),
        ("moderation.removed", "m1")
    );
    assert_eq!(e.user_id.as_deref(), Some("ann"));
    assert_eq!(
        e.data,
        json!({"action_id": remove.action_id, "actor": "ops", "reason": "spam", "entries": 1,
               "periods": []})
    );

    // ann is back on m1 and plays a second period of m2: a ban reaches both boards, one event
    // each, m2's naming both periods; a second ban changes nothing and writes nothing.
    post(&env, "m1", "ann", "6").await;
    next_period(&env, "m2", &p1).await;
    post(&env, "m2", "ann", "4").await;
    let p2 = periods::current(&env.db, &board("m2"))
        .await
        .expect("periods")
        .expect("resets")
        .current;
    let ban = command(Uuid::new_v4(), Action::Ban { user: user("ann") }, "cheat");
    moderate(&env, &ban).await.expect("banned");
    moderate(&env, &command(Uuid::new_v4(), ban.action.clone(), "cheat"))
        .await
        .expect("banned already");
    let unban = command(
        Uuid::new_v4(),
        Action::Unban { user: user("ann") },
        "appeal",
    );
    moderate(&env, &unban).await.expect("unbanned");
    let events = moderation_events(&env).await;
    let seen: Vec<(&str, &str, i64, serde_json::Value)> = events[1..]
        .iter()
        .map(|e| {
            (
                e.kind.as_str(),
                e.board.as_str(),
                e.data["entries"].as_i64().expect("entries"),
                e.data["periods"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("moderation.banned", "m1", 1, json!([])),
            ("moderation.banned", "m2", 2, json!([p1, p2])),
            ("moderation.unbanned", "m1", 1, json!([])),
            ("moderation.unbanned", "m2", 2, json!([p1, p2])),
        ]
    );
    assert_eq!(
        events[2].id,
        derived(&env, &format!("moderation.banned:{}:m2", ban.action_id)).await
    );

    // bob is frozen in m2's first period (a close's standings name him) and has score events:
    // his erasure is one event per board, under the pseudonym, and no event names him since.
    next_period(&env, "m2", &p2).await;
    env.mark_projected().await;
    assert!(matches!(
        periods::close(&env.db, &board("m2"), &p1)
            .await
            .expect("close"),
        periods::CloseOutcome::Closed(_)
    ));
    let closes = logged(&env, Kind::PeriodClosed).await;
    assert!(closes[0].data.to_string().contains("\"bob\""), "{closes:?}");
    let erase = command(Uuid::new_v4(), Action::Erase { user: user("bob") }, "gdpr");
    let erased = moderate(&env, &erase).await.expect("erased");
    let events = moderation_events(&env).await;
    let erasures: Vec<&Event> = events
        .iter()
        .filter(|e| e.kind == "moderation.erased")
        .collect();
    assert_eq!(erasures.len(), 2, "{events:?}");
    let pseudonym = erasures[0].user_id.clone().expect("a user");
    assert!(pseudonym.starts_with("erased-"), "{pseudonym}");
    assert_eq!(
        erasures
            .iter()
            .map(|e| e.board.as_str())
            .collect::<Vec<_>>(),
        ["m1", "m2"],
        "{erased:?}"
    );
    for table in ["events", "event_queue"] {
        let left: i64 = env
            .client
            .query_one(
                &format!(
                    "SELECT count(*) FROM {table}
                     WHERE user_id = 'bob' OR payload::text LIKE '%\"bob\"%'"
                ),
                &[],
            )
            .await
            .expect("count")
            .get(0);
        assert_eq!(left, 0, "{table} still names the erased user");
    }
    let frozen = logged(&env, Kind::PeriodClosed).await;
    assert!(
        frozen[0].data.to_string().contains(&pseudonym),
        "the close's standings name the pseudonym: {:?}",
        frozen[0].data
    );
    let scores = logged(&env, Kind::ScoreAccepted).await;
    assert_eq!(
        scores
            .iter()
            .filter(|e| e.user_id.as_deref() == Some(pseudonym.as_str()))
            .count(),
        2,
        "bob's two score events carry the pseudonym"
    );
}

/// A command of `score` for `user` on `name` through `submit` (a guarded board's path).
async fn submit_score(
    env: &Env,
    groups: &CommandGroups,
    defs: &Definitions,
    name: &str,
    event: Uuid,
    user: &str,
    score: i64,
) {
    let value = Submitted::One(serde_json::Number::from(score));
    let id = event.to_string();
    let fields = Fields {
        event_id: &id,
        user_id: user,
        score: Some(&value),
        delta: None,
        metadata: None,
        writer: Writer::Service,
        attempt: None,
    };
    submit(groups, defs, &env.db, &board(name), &fields, None)
        .await
        .expect("submitted");
}

#[tokio::test]
async fn a_held_score_is_one_held_event_then_one_approval_or_rejection() {
    let env = env().await;
    let rules = ReviewRules {
        ceiling: vec![Some(100)],
        max_jump: None,
        max_per_minute: None,
    };
    declare(&env, "rv", Reset::Never, Some(rules)).await;
    let groups = CommandGroups::start(env.db.clone(), 1, 8);
    let defs = Definitions::new(Duration::ZERO);
    let (high, other, fine) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    submit_score(&env, &groups, &defs, "rv", fine, "ann", 50).await;
    submit_score(&env, &groups, &defs, "rv", high, "ann", 500).await;
    // Its repeat is told the same and holds nothing more.
    submit_score(&env, &groups, &defs, "rv", high, "ann", 500).await;
    submit_score(&env, &groups, &defs, "rv", other, "bob", 900).await;
    let held = logged(&env, Kind::ReviewHeld).await;
    assert_eq!(held.len(), 2, "{held:?}");
    assert_eq!(
        held[0].id,
        derived(&env, &format!("review.held:{high}")).await
    );
    assert_eq!(
        (held[0].board.as_str(), held[0].user_id.as_deref()),
        ("rv", Some("ann"))
    );
    assert_eq!(held[0].data["event_id"], json!(high));
    assert_eq!(held[0].data["rule"], json!("ceiling"));
    assert_eq!(held[0].data["fields"]["score"], json!(500));

    // Approved twice (the second finishes nothing more): one approval, and the score's own
    // event under the command's id.
    let high_id = EventId::parse(&high.to_string()).expect("id");
    for _ in 0..2 {
        review::approve(&groups, &defs, &env.db, &high_id, "ops", "checked")
            .await
            .expect("approved");
    }
    let approved = logged(&env, Kind::ReviewApproved).await;
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(
        approved[0].id,
        derived(&env, &format!("review.approved:{high}")).await
    );
    assert_eq!(
        approved[0].data,
        json!({"event_id": high, "rule": "ceiling", "detail": held[0].data["detail"],
               "actor": "ops", "reason": "checked"})
    );
    let scores = logged(&env, Kind::ScoreAccepted).await;
    assert_eq!(
        scores.iter().map(|e| e.id).collect::<Vec<_>>(),
        [fine, high],
        "the held score is in only once approved"
    );

    // Rejected once; a second rejection is refused and writes nothing.
    let other_id = EventId::parse(&other.to_string()).expect("id");
    review::reject(&env.db, &other_id, "ops", "no")
        .await
        .expect("rejected");
    assert!(matches!(
        review::reject(&env.db, &other_id, "ops", "no").await,
        Err(DecideError::Decided(..))
    ));
    let rejected = logged(&env, Kind::ReviewRejected).await;
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(
        rejected[0].id,
        derived(&env, &format!("review.rejected:{other}")).await
    );
    assert_eq!(rejected[0].user_id.as_deref(), Some("bob"));
    assert_eq!(
        (&rejected[0].data["actor"], &rejected[0].data["reason"]),
        (&json!("ops"), &json!("no"))
    );
    assert!(logged(&env, Kind::ReviewApproved).await.len() == 1);
}
