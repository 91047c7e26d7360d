//! Board definitions against the real PostgreSQL: declare, update, list, revisions, and the
//! refusal to change the rule of a board that has entries, including an entry whose command
//! is still in flight when the change arrives.

use ledgerboard_core::board::definition::{
    self, Declaration, DefineError, Expect, define, list, update,
};
use ledgerboard_core::board::definition::{Operator, Sort, TieBreak};
use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::model::BoardId;
use ledgerboard_testkit::TestDb;

use crate::common::{Env, env, lock_waits};

async fn database() -> (TestDb, Database) {
    let Env { test_db, db, .. } = env().await;
    (test_db, db)
}

fn board(name: &str) -> BoardId {
    BoardId::parse(name).expect("board")
}

fn time_trial() -> Declaration {
    Declaration {
        display_name: Some("Lap 1".into()),
        operator: Some(Operator::Best),
        sort: Some(Sort::Ascending),
        tie_break: Some(TieBreak::Earliest),
        min_score: Some(1),
        max_score: Some(3_600_000),
        ..Declaration::default()
    }
}

/// An entry of `board` planted as a command would leave it (the test's own transaction).
async fn plant_entry(db: &TestDb, board: &str) {
    db.client()
        .await
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version) VALUES ($1, 'u', 5, 1)",
            &[&board],
        )
        .await
        .expect("plant an entry");
}

async fn stored(db: &TestDb) -> Vec<(String, String, i64)> {
    db.client()
        .await
        .query(
            "SELECT board_id, operator, revision FROM board_definitions ORDER BY board_id",
            &[],
        )
        .await
        .expect("definitions")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[tokio::test]
async fn declare_update_and_list_bump_revisions_only_on_change() {
    let (db, pool) = database().await;
    let lap = board("lap-1");

    // Undeclared: the implicit definition, revision 0.
    let implicit = definition::get(&pool, &lap).await.expect("get");
    assert!(!implicit.declared);
    assert_eq!((implicit.operator, implicit.revision), (Operator::Add, 0));

    let created = definition::declare(&pool, &lap, &time_trial())
        .await
        .expect("declare");
    assert!(created.created && created.changed);
    assert_eq!(created.definition.revision, 1);
    assert_eq!(created.definition.order().tie_sign(), 1);
    assert_eq!(
        (created.definition.min_delta, created.definition.max_delta),
        (None, None)
    );
    assert_eq!(
        definition::get(&pool, &lap).await.expect("get"),
        created.definition
    );

    // The same declaration again: nothing written, the revision stays.
    let def = time_trial().definition(lap.clone()).expect("valid");
    let again = define(&pool, &def, Expect::Any).await.expect("repeat");
    assert!(!again.created && !again.changed);
    assert_eq!(again.definition.revision, 1);
    assert!(matches!(
        definition::declare(&pool, &lap, &time_trial()).await,
        Err(DefineError::AlreadyDeclared(_))
    ));

    // An update changes what it states and keeps the rest; the board has no entries, so even
    // its rule may change.
    let renamed = update(
        &pool,
        &lap,
        &Declaration {
            display_name: Some("Lap one".into()),
            operator: Some(Operator::Latest),
            ..Declaration::default()
        },
    )
    .await
    .expect("update");
    assert_eq!(renamed.definition.revision, 2);
    assert_eq!(renamed.definition.display_name, "Lap one");
    assert_eq!(renamed.definition.operator, Operator::Latest);
    assert_eq!(renamed.definition.sort, Sort::Ascending);
    assert_eq!(renamed.definition.max_score, 3_600_000);
    // A writer that read revision 1 is refused: someone changed it meanwhile.
    assert!(matches!(
        define(&pool, &def, Expect::Revision(1)).await,
        Err(DefineError::Changed(_))
    ));
    // Becoming an add board gives it the default delta bounds.
    let add = update(
        &pool,
        &lap,
        &Declaration {
            operator: Some(Operator::Add),
            ..Declaration::default()
        },
    )
    .await
    .expect("update");
    assert_eq!(
        (
            add.definition.min_delta,
            add.definition.max_delta,
            add.definition.revision
        ),
        (Some(-1000), Some(1000), 3)
    );

    for name in ["b", "a.2", "C", "a-1"] {
        let plain = Declaration {
            operator: Some(Operator::Add),
            ..Declaration::default()
        };
        definition::declare(&pool, &board(name), &plain)
            .await
            .expect("declare");
    }
    // Byte order: upper case first, '-' (0x2D) before '.' (0x2E).
    let names = |defs: Vec<ledgerboard_core::board::definition::BoardDefinition>| {
        defs.into_iter()
            .map(|d| d.board.to_string())
            .collect::<Vec<_>>()
    };
    let first = list(&pool, None, 2).await.expect("list");
    assert_eq!(names(first.clone()), ["C", "a-1"]);
    let rest = list(&pool, Some(&first[1].board), 10).await.expect("list");
    assert_eq!(names(rest), ["a.2", "b", "lap-1"]);
    assert_eq!(stored(&db).await.len(), 5);
}

#[tokio::test]
async fn the_rule_of_a_board_with_entries_does_not_change() {
    let (db, pool) = database().await;
    let weekly = board("weekly");
    plant_entry(&db, "weekly").await;

    // An undeclared board with entries keeps the implicit rule: declaring another is refused,
    // and nothing is written.
    let refused = definition::declare(&pool, &weekly, &time_trial()).await;
    match refused {
        Err(DefineError::HasEntries { operator, sort, .. }) => {
            assert_eq!((operator, sort), ("add", "descending"));
        }
        other => panic!("expected has entries, got {other:?}"),
    }
    assert_eq!(stored(&db).await, []);

    // Declaring it with its rule (bounds and a name) is allowed.
    let keep = Declaration {
        display_name: Some("Weekly".into()),
        operator: Some(Operator::Add),
        min_delta: Some(0),
        max_delta: Some(50),
        ..Declaration::default()
    };
    let declared = definition::declare(&pool, &weekly, &keep)
        .await
        .expect("same rule");
    assert_eq!(declared.definition.revision, 1);

    for change in [
        Declaration {
            sort: Some(Sort::Ascending),
            ..Declaration::default()
        },
        Declaration {
            tie_break: Some(TieBreak::Earliest),
            ..Declaration::default()
        },
        Declaration {
            operator: Some(Operator::Best),
            ..Declaration::default()
        },
    ] {
        assert!(
            matches!(
                update(&pool, &weekly, &change).await,
                Err(DefineError::HasEntries { .. })
            ),
            "{change:?}"
        );
    }
    assert_eq!(stored(&db).await, [("weekly".into(), "add".into(), 1)]);

    // Bounds still change.
    let bounds = update(
        &pool,
        &weekly,
        &Declaration {
            max_delta: Some(100),
            ..Declaration::default()
        },
    )
    .await
    .expect("bounds");
    assert_eq!(
        (bounds.definition.max_delta, bounds.definition.revision),
        (Some(100), 2)
    );
}

/// The check that the board has no entries and the write of the new rule are exact even when a
/// command's entry is still uncommitted: the definer waits for it (the table lock), then sees
/// it. Without the lock, the definer's snapshot would not see the entry, the change would be
/// written, and the entry would commit under the old rule.
#[tokio::test]
async fn a_rule_change_waits_for_the_command_in_flight_and_then_refuses() {
    let (db, pool) = database().await;
    let mut command = db.client().await;
    let tx = command.transaction().await.expect("begin");
    tx.execute(
        "INSERT INTO user_scores (board_id, user_id, score, version) VALUES ('fresh', 'u', 1, 1)",
        &[],
    )
    .await
    .expect("an uncommitted entry");

    let definer = {
        let pool = pool.clone();
        tokio::spawn(
            async move { definition::declare(&pool, &board("fresh"), &time_trial()).await },
        )
    };
    lock_waits(&db.client().await, 1).await;
    assert!(
        !definer.is_finished(),
        "the definer must wait for the command in flight"
    );
    tx.commit().await.expect("the command commits");
    let outcome = definer.await.expect("the definer's task");
    assert!(
        matches!(outcome, Err(DefineError::HasEntries { .. })),
        "{outcome:?}"
    );
    assert_eq!(stored(&db).await, []);
}

/// A definer does not wait for long: commands queue behind it while it waits.
#[tokio::test]
async fn a_definer_gives_up_on_a_long_transaction() {
    let (db, pool) = database().await;
    let mut command = db.client().await;
    let tx = command.transaction().await.expect("begin");
    tx.execute(
        "INSERT INTO user_scores (board_id, user_id, score, version) VALUES ('other', 'u', 1, 1)",
        &[],
    )
    .await
    .expect("an uncommitted entry");
    let started = std::time::Instant::now();
    let outcome = definition::declare(&pool, &board("new"), &time_trial()).await;
    assert!(
        matches!(outcome, Err(DefineError::Store(StoreError::Contended(_)))),
        "{outcome:?}"
    );
    assert!(
        started.elapsed() >= definition::LOCK_WAIT,
        "{:?}",
        started.elapsed()
    );
    tx.rollback().await.expect("rollback");
    // Once the transaction is gone, the same declaration goes through.
    definition::declare(&pool, &board("new"), &time_trial())
        .await
        .expect("declare");
}
