//! Boards with several columns and linked boards (issue 37) against the real PostgreSQL: what a
//! command writes on each board of a set, the whole tuple kept by `best` (never a mix), `add`
//! column by column within each column's bounds, a repeat answered for every board, a reuse
//! and a refused value refused for all with nothing written anywhere, and the declarations
//! that cannot be linked.

use crate::common::{Env, env};
use ledgerboard_core::board::definition::{
    self, Column, Declaration, DefineError, Definitions, Sort,
};
use ledgerboard_core::board::group::CommandGroups;
use ledgerboard_core::board::{self, Fields, Operator, SubmitError};
use ledgerboard_core::db::StoreError;
use ledgerboard_core::model::{BoardId, CommandOutcome, Submitted, ValidationError};
use std::time::Duration;
use uuid::Uuid;

fn id(b: &str) -> BoardId {
    BoardId::parse(b).expect("board")
}

fn column(name: &str, order: Sort, min: i64, max: i64) -> Column {
    Column {
        name: name.into(),
        order,
        min,
        max,
    }
}

/// Laps descending (0..100), then time ascending (1..3,600,000 ms).
fn racing_columns(max_laps: i64) -> Vec<Column> {
    vec![
        column("laps", Sort::Descending, 0, max_laps),
        column("time_ms", Sort::Ascending, 1, 3_600_000),
    ]
}

struct Racing {
    env: Env,
    groups: CommandGroups,
    definitions: Definitions,
}

impl Racing {
    /// `runs` (best, earliest) feeding `runs-daily` (best, daily) and `runs-laps` (latest, at
    /// most 20 laps), all ranked by laps then time.
    async fn new() -> Self {
        let env = env().await;
        let declare = |b: &'static str,
                       operator,
                       reset: Option<&'static str>,
                       max_laps,
                       feeds: Vec<&'static str>| {
            let db = env.db.clone();
            let reset = reset.map(|r| definition::parse_reset(r).expect("reset"));
            async move {
                let declaration = Declaration {
                    operator: Some(operator),
                    tie_break: Some(definition::parse_tie_break("earliest").expect("tie")),
                    columns: Some(racing_columns(max_laps)),
                    feeds: Some(feeds.into_iter().map(id).collect()),
                    reset,
                    ..Declaration::default()
                };
                definition::declare(&db, &id(b), &declaration)
                    .await
                    .unwrap_or_else(|e| panic!("declare {b}: {e}"));
            }
        };
        declare("runs-daily", Operator::Best, Some("daily"), 100, vec![]).await;
        declare("runs-laps", Operator::Latest, None, 20, vec![]).await;
        declare(
            "runs",
            Operator::Best,
            None,
            100,
            vec!["runs-daily", "runs-laps"],
        )
        .await;
        let groups = CommandGroups::start(env.db.clone(), 2, 8);
        Self {
            env,
            groups,
            definitions: Definitions::new(Duration::from_millis(100)),
        }
    }

    async fn post(
        &self,
        board: &str,
        event: Uuid,
        user: &str,
        score: &str,
    ) -> Result<CommandOutcome, SubmitError> {
        let score: Submitted = serde_json::from_str(score).expect("a value");
        let event = event.to_string();
        let fields = Fields {
            event_id: &event,
            user_id: user,
            score: Some(&score),
            delta: None,
            metadata: None,
            writer: board::Writer::Service,
            attempt: None,
        };
        board::submit(
            &self.groups,
            &self.definitions,
            &self.env.db,
            &id(board),
            &fields,
            None,
        )
        .await
    }

    /// (board, user, score, col2, col3, version) of every entry, and the outbox's and the
    /// events' row counts: everything a command writes.
    async fn written(&self) -> (Vec<(String, String, i64, i64, i64, i64)>, i64, i64) {
        let c = &self.env.client;
        let rows = c
            .query(
                "SELECT board_id, user_id, score, col2, col3, version FROM user_scores
                 ORDER BY board_id, user_id",
                &[],
            )
            .await
            .expect("rows")
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
            .collect();
        let count = |sql: &'static str| async move {
            c.query_one(sql, &[]).await.expect("count").get::<_, i64>(0)
        };
        (
            rows,
            count("SELECT count(*) FROM leaderboard_outbox").await,
            count("SELECT count(*) FROM score_events").await,
        )
    }
}

#[tokio::test]
async fn one_command_feeds_every_linked_board_once_all_or_nothing() {
    let r = Racing::new().await;
    let first = Uuid::new_v4();
    let out = r
        .post("runs", first, "ann", "[12, 93120]")
        .await
        .expect("applied");
    assert!(!out.duplicate && out.improved);
    assert_eq!(
        (out.score, out.scores.clone()),
        (12, Some(vec![12, 93_120]))
    );
    let fed: Vec<(&str, bool, Option<Vec<i64>>)> = out
        .linked
        .iter()
        .map(|f| (f.board.as_str(), f.duplicate, f.scores.clone()))
        .collect();
    assert_eq!(
        fed,
        vec![
            ("runs-daily", false, Some(vec![12, 93_120])),
            ("runs-laps", false, Some(vec![12, 93_120])),
        ]
    );
    // The daily board writes into its period, and says which.
    assert!(out.linked[0].period.is_some() && out.linked[1].period.is_none());
    let (rows, outbox, events) = r.written().await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    // Time ascends where laps descend: stored negated, so one index order serves the board.
    assert!(
        rows.iter()
            .all(|x| x.2 == 12 && x.3 == -93_120 && x.4 == 0 && x.5 == 1)
    );
    assert_eq!((outbox, events), (3, 3));
    // The fed boards' events record the command's own id.
    let sources: i64 = r
        .env
        .client
        .query_one(
            "SELECT count(*) FROM score_events WHERE source_event = $1",
            &[&first],
        )
        .await
        .expect("events")
        .get(0);
    assert_eq!(sources, 2);

    // A repeat answers for every board, and writes nothing.
    let again = r
        .post("runs", first, "ann", r#"{"time_ms": 93120, "laps": 12}"#)
        .await
        .expect("a repeat");
    assert!(again.duplicate && again.linked.iter().all(|f| f.duplicate));
    assert_eq!(again.linked.len(), 2);
    assert_eq!(r.written().await.1, 3);

    // The same id with another value: refused by every board, nothing written.
    let before = r.written().await;
    match r.post("runs", first, "ann", "[12, 93000]").await {
        Err(SubmitError::Store(StoreError::EventIdReused(_))) => {}
        other => panic!("a reuse answered {other:?}"),
    }
    assert_eq!(r.written().await, before);

    // 30 laps: runs and runs-daily take it, runs-laps (at most 20) refuses it, so nobody does.
    match r.post("runs", Uuid::new_v4(), "ann", "[30, 1000]").await {
        Err(SubmitError::Fed { board, error }) => {
            assert_eq!(board.as_str(), "runs-laps");
            assert!(
                matches!(
                    *error,
                    SubmitError::Invalid(ValidationError::ColumnOutOfRange { .. })
                ),
                "{error:?}"
            );
        }
        other => panic!("a value one board refuses answered {other:?}"),
    }
    assert_eq!(r.written().await, before);
}

#[tokio::test]
async fn best_keeps_a_whole_submitted_tuple_and_latest_replaces_it() {
    let r = Racing::new().await;
    let post = |v: &'static str| r.post("runs", Uuid::new_v4(), "bo", v);
    post("[10, 95000]").await.expect("first");
    // Fewer laps in less time: worse on the first column, so not kept by best (Nakama's best
    // per column would keep 10 laps in 80 s, a pair nobody drove).
    let worse = post("[9, 80000]").await.expect("recorded");
    assert!(!worse.improved);
    assert_eq!(worse.scores, Some(vec![10, 95_000]));
    // Latest (runs-laps) took it all the same.
    assert_eq!(worse.linked[1].scores, Some(vec![9, 80_000]));
    let better = post("[10, 90000]").await.expect("improved");
    assert!(better.improved);
    assert_eq!((better.scores, better.version), (Some(vec![10, 90_000]), 2));
    // Equal on every column: not better (the standing one was reached first).
    let equal = post("[10, 90000]").await.expect("recorded");
    assert!(!equal.improved);
}

#[tokio::test]
async fn add_adds_column_by_column_within_each_columns_bounds() {
    let env = env().await;
    let declaration = Declaration {
        operator: Some(Operator::Add),
        columns: Some(vec![
            column("wins", Sort::Descending, 0, 10),
            column("kills", Sort::Descending, 0, 1_000),
        ]),
        ..Declaration::default()
    };
    definition::declare(&env.db, &id("shooter"), &declaration)
        .await
        .expect("declare");
    let def = definition::get(&env.db, &id("shooter"))
        .await
        .expect("definition");
    let add = |wins: i64, kills: i64| {
        let value: Submitted = serde_json::from_str(&format!("[{wins}, {kills}]")).expect("value");
        let cmd = board::command(
            &def,
            &Uuid::new_v4().to_string(),
            "cy",
            None,
            Some(&value),
            None,
        )
        .expect("valid");
        let db = env.db.clone();
        async move { board::apply_score_command(&db, &cmd, None).await }
    };
    add(4, 300).await.expect("first");
    let out = add(5, 200).await.expect("second");
    assert_eq!((out.scores, out.version), (Some(vec![9, 500]), 2));
    // 9 + 2 wins leave the first column's bounds: nothing written.
    match add(2, 1).await {
        Err(StoreError::ScoreOutOfRange) => {}
        other => panic!("{other:?}"),
    }
    let held: (i64, i64, i64) = {
        let r = env
            .client
            .query_one(
                "SELECT score, col2, version FROM user_scores WHERE board_id = 'shooter'",
                &[],
            )
            .await
            .expect("row");
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!(held, (9, 500, 2));
}

/// A refusal only the database can make (a sum past a fed board's bound) undoes the whole
/// transaction: the board the command was sent to keeps nothing of it either.
#[tokio::test]
async fn a_sum_one_fed_board_refuses_writes_nothing_on_any_board() {
    let env = env().await;
    let declare = |b: &'static str, max_wins: i64, feeds: Vec<&'static str>| {
        let db = env.db.clone();
        async move {
            let declaration = Declaration {
                operator: Some(Operator::Add),
                columns: Some(vec![
                    column("wins", Sort::Descending, 0, max_wins),
                    column("kills", Sort::Descending, 0, 1_000),
                ]),
                feeds: Some(feeds.into_iter().map(id).collect()),
                ..Declaration::default()
            };
            definition::declare(&db, &id(b), &declaration)
                .await
                .expect("declare");
        }
    };
    declare("season", 5, vec![]).await;
    declare("career", 1_000, vec!["season"]).await;
    let groups = CommandGroups::start(env.db.clone(), 1, 4);
    let definitions = Definitions::new(Duration::from_millis(100));
    let post = |wins: i64| {
        let value: Submitted = serde_json::from_str(&format!("[{wins}, 1]")).expect("value");
        let (groups, definitions, db) = (&groups, &definitions, &env.db);
        async move {
            let event = Uuid::new_v4().to_string();
            let fields = Fields {
                event_id: &event,
                user_id: "eve",
                score: None,
                delta: Some(&value),
                metadata: None,
                writer: board::Writer::Service,
                attempt: None,
            };
            board::submit(groups, definitions, db, &id("career"), &fields, None).await
        }
    };
    post(4).await.expect("4 wins");
    // 4 + 3 passes career's bound and not season's (5).
    match post(3).await {
        Err(SubmitError::Fed { board, error }) => {
            assert_eq!(board.as_str(), "season");
            assert!(
                matches!(*error, SubmitError::Store(StoreError::ScoreOutOfRange)),
                "{error:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let held: Vec<(String, i64, i64)> = env
        .client
        .query(
            "SELECT board_id, score, version FROM user_scores ORDER BY board_id",
            &[],
        )
        .await
        .expect("rows")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(held, vec![("career".into(), 4, 1), ("season".into(), 4, 1)]);
    let outbox: i64 = env
        .client
        .query_one("SELECT count(*) FROM leaderboard_outbox", &[])
        .await
        .expect("outbox")
        .get(0);
    assert_eq!(outbox, 2);
}

#[tokio::test]
async fn links_that_would_loop_chain_or_mix_columns_are_refused() {
    let env = env().await;
    let declare = |b: &'static str, columns: Vec<Column>, feeds: Vec<&'static str>| {
        let db = env.db.clone();
        async move {
            let declaration = Declaration {
                operator: Some(Operator::Best),
                columns: Some(columns),
                feeds: Some(feeds.into_iter().map(id).collect()),
                ..Declaration::default()
            };
            definition::declare(&db, &id(b), &declaration).await
        }
    };
    let update = |b: &'static str, feeds: Vec<&'static str>| {
        let db = env.db.clone();
        async move {
            let changes = Declaration {
                feeds: Some(feeds.into_iter().map(id).collect()),
                ..Declaration::default()
            };
            definition::update(&db, &id(b), &changes).await
        }
    };
    // Unknown.
    match declare("a", racing_columns(100), vec!["nowhere"]).await {
        Err(DefineError::FeedsUnknown(unknown)) => assert_eq!(unknown, vec!["nowhere"]),
        other => panic!("{other:?}"),
    }
    declare("b", racing_columns(100), vec![]).await.expect("b");
    declare(
        "other",
        vec![column("laps", Sort::Descending, 0, 9)],
        vec![],
    )
    .await
    .expect("other");
    // Other columns (one column fewer).
    match declare("a", racing_columns(100), vec!["b", "other"]).await {
        Err(DefineError::FeedsColumns { others, .. }) => assert_eq!(others, vec!["other"]),
        other => panic!("{other:?}"),
    }
    declare("a", racing_columns(100), vec!["b"])
        .await
        .expect("a feeds b");
    // A loop: b feeding a, which feeds b.
    assert!(matches!(
        update("b", vec!["a"]).await,
        Err(DefineError::FeedsLoop(_))
    ));
    // A chain: c feeding a, which feeds others.
    declare("c", racing_columns(100), vec![]).await.expect("c");
    assert!(matches!(
        update("c", vec!["a"]).await,
        Err(DefineError::FeedsLoop(_))
    ));
    // A fed board's columns cannot leave its feeder's behind.
    let changes = Declaration {
        columns: Some(vec![
            column("laps", Sort::Descending, 0, 100),
            column("time_ms", Sort::Descending, 1, 3_600_000),
        ]),
        ..Declaration::default()
    };
    assert!(matches!(
        definition::update(&env.db, &id("b"), &changes).await,
        Err(DefineError::FeedsColumns { .. })
    ));
    // Its bounds can.
    let wider = Declaration {
        columns: Some(racing_columns(500)),
        ..Declaration::default()
    };
    definition::update(&env.db, &id("b"), &wider)
        .await
        .expect("bounds change");
    // A board whose commands carry a delta cannot take a best board's scores.
    let adds = Declaration {
        operator: Some(Operator::Add),
        columns: Some(racing_columns(100)),
        ..Declaration::default()
    };
    definition::declare(&env.db, &id("d"), &adds)
        .await
        .expect("d");
    match update("c", vec!["d"]).await {
        Err(DefineError::FeedsValue { others, .. }) => assert_eq!(others, vec!["d"]),
        other => panic!("{other:?}"),
    }
    // And a board itself is never its own feed.
    assert!(matches!(
        update("c", vec!["c"]).await,
        Err(DefineError::Invalid(_))
    ));
}

#[tokio::test]
async fn the_number_and_orders_of_columns_of_a_board_with_entries_do_not_change() {
    let r = Racing::new().await;
    r.post("runs", Uuid::new_v4(), "di", "[3, 60000]")
        .await
        .expect("applied");
    // Detach it first (its feeds stay otherwise), then try to reorder its columns.
    let flipped = Declaration {
        feeds: Some(Vec::new()),
        columns: Some(vec![
            column("laps", Sort::Descending, 0, 100),
            column("time_ms", Sort::Descending, 1, 3_600_000),
        ]),
        ..Declaration::default()
    };
    assert!(matches!(
        definition::update(&r.env.db, &id("runs"), &flipped).await,
        Err(DefineError::HasEntries { .. })
    ));
    // A rename and new bounds are not a change of the rule.
    let renamed = Declaration {
        feeds: Some(Vec::new()),
        columns: Some(vec![
            column("lap_count", Sort::Descending, 0, 100),
            column("time_ms", Sort::Ascending, 1, 7_200_000),
        ]),
        ..Declaration::default()
    };
    definition::update(&r.env.db, &id("runs"), &renamed)
        .await
        .expect("renamed");
}
