//! Score commands on declared boards (add, best, latest; either sort; earliest ties) against
//! the real PostgreSQL: what each operator's statement writes to user_scores, score_events and
//! the outbox, the answer (`improved`), repeats and 409s, bounds and the revision check.

use crate::common::{Env, env};
use ledgerboard_core::board::definition::BoardDefinition;
use ledgerboard_core::board::{self, apply_score_command};
use ledgerboard_core::db::StoreError;
use ledgerboard_core::model::Submitted;
use ledgerboard_core::model::{CommandOutcome, ValidationError};
use serde_json::{Number, Value, json};
use uuid::Uuid;

impl Env {
    /// Declares `board` by hand (definitions management is not this test's subject).
    async fn declare(
        &self,
        board: &str,
        operator: &str,
        sort: &str,
        tie: &str,
        min: i64,
        max: i64,
    ) {
        let (min_delta, max_delta) = if operator == "add" {
            (Some(-50_i64), Some(50_i64))
        } else {
            (None, None)
        };
        self.client
            .execute(
                "INSERT INTO board_definitions
                     (board_id, operator, sort, tie_break, min_score, max_score, min_delta, max_delta)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[&board, &operator, &sort, &tie, &min, &max, &min_delta, &max_delta],
            )
            .await
            .expect("declare");
    }

    async fn definition(&self, board: &str) -> BoardDefinition {
        let board = ledgerboard_core::model::BoardId::parse(board).expect("board");
        board::definition::get(&self.db, &board)
            .await
            .expect("definition")
    }

    /// Validates and applies one command with the board's current definition.
    async fn post(
        &self,
        board: &str,
        event: Uuid,
        user: &str,
        field: &str,
        value: i64,
        metadata: Option<Value>,
    ) -> Result<CommandOutcome, String> {
        let def = self.definition(board).await;
        let n = Submitted::One(Number::from(value));
        let (score, delta) = if field == "score" {
            (Some(&n), None)
        } else {
            (None, Some(&n))
        };
        let cmd = board::command(
            &def,
            &event.to_string(),
            user,
            score,
            delta,
            metadata.as_ref(),
        )
        .map_err(|e| e.code().to_owned())?;
        apply_score_command(&self.db, &cmd, None)
            .await
            .map_err(|e| match e {
                StoreError::EventIdReused(_) => "event_id_reused".to_owned(),
                StoreError::ScoreOutOfRange => "score_out_of_range".to_owned(),
                StoreError::DefinitionChanged => "definition_changed".to_owned(),
                other => other.to_string(),
            })
    }

    /// user → (score, version, tie, metadata) of `board`.
    async fn rows(&self, board: &str) -> Vec<(String, i64, i64, i64, Option<String>)> {
        self.client
            .query(
                "SELECT user_id, score, version, tie, metadata::text FROM user_scores
                 WHERE board_id = $1 ORDER BY user_id",
                &[&board],
            )
            .await
            .expect("rows")
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect()
    }

    /// The outbox rows of `board`: (user, score, version, tie).
    async fn outbox(&self, board: &str) -> Vec<(String, i64, i64, i64)> {
        self.client
            .query(
                "SELECT user_id, absolute_score, score_version, tie FROM leaderboard_outbox
                 WHERE board_id = $1 ORDER BY id",
                &[&board],
            )
            .await
            .expect("outbox")
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    }
}

fn at(o: &CommandOutcome) -> (i64, i64, bool, bool) {
    (o.score, o.version, o.improved, o.duplicate)
}

#[tokio::test]
async fn best_keeps_the_best_and_records_a_submission_that_does_not_improve() {
    let env = env().await;
    env.declare("run", "best", "descending", "user_id", 0, 1_000_000)
        .await;
    let first = Uuid::new_v4();
    let o = env
        .post("run", first, "ann", "score", 500, None)
        .await
        .expect("first");
    assert_eq!(at(&o), (500, 1, true, false));
    // Worse and equal: recorded, nothing changes, the standing best answered.
    let worse = Uuid::new_v4();
    let o = env
        .post("run", worse, "ann", "score", 400, None)
        .await
        .expect("worse");
    assert_eq!(at(&o), (500, 1, false, false));
    let o = env
        .post("run", Uuid::new_v4(), "ann", "score", 500, None)
        .await
        .expect("equal");
    assert_eq!(at(&o), (500, 1, false, false));
    let o = env
        .post(
            "run",
            Uuid::new_v4(),
            "ann",
            "score",
            700,
            Some(json!({"car": "red"})),
        )
        .await
        .expect("better");
    assert_eq!(at(&o), (700, 2, true, false));
    assert_eq!(
        env.rows("run").await,
        vec![("ann".into(), 700, 2, 0, Some(r#"{"car": "red"}"#.into()))]
    );
    // Only the two changes reached the outbox.
    assert_eq!(
        env.outbox("run").await,
        vec![("ann".into(), 500, 1, 0), ("ann".into(), 700, 2, 0)]
    );
    // The non-improving event id is used: its repeat answers what it answered then.
    let o = env
        .post("run", worse, "ann", "score", 400, None)
        .await
        .expect("repeat");
    assert_eq!(at(&o), (500, 1, false, true));
    // Reused with another score, operator field or metadata: 409.
    assert_eq!(
        env.post("run", worse, "ann", "score", 401, None).await,
        Err("event_id_reused".into())
    );
    assert_eq!(
        env.post("run", worse, "ann", "score", 400, Some(json!({"a": 1})))
            .await,
        Err("event_id_reused".into())
    );
    assert_eq!(
        env.post("run", first, "bob", "score", 500, None).await,
        Err("event_id_reused".into())
    );
    // The wrong field, and bounds.
    assert_eq!(
        env.post("run", Uuid::new_v4(), "ann", "delta", 5, None)
            .await,
        Err("wrong_value_field".into())
    );
    assert_eq!(
        env.post("run", Uuid::new_v4(), "ann", "score", 1_000_001, None)
            .await,
        Err("score_out_of_range".into())
    );
}

#[tokio::test]
async fn an_ascending_best_board_keeps_the_lowest_and_earliest_ties_follow_the_reach() {
    let env = env().await;
    env.declare("trial", "best", "ascending", "earliest", 1, 3_600_000)
        .await;
    for (user, ms) in [("ann", 90_000), ("bob", 80_000), ("cid", 80_000)] {
        env.post("trial", Uuid::new_v4(), user, "score", ms, None)
            .await
            .expect("post");
    }
    let o = env
        .post("trial", Uuid::new_v4(), "ann", "score", 95_000, None)
        .await
        .expect("slower");
    assert_eq!(at(&o), (90_000, 1, false, false));
    let o = env
        .post("trial", Uuid::new_v4(), "ann", "score", 80_000, None)
        .await
        .expect("faster");
    assert_eq!(at(&o), (80_000, 2, true, false));
    let rows = env.rows("trial").await;
    // Ascending earliest: tie = +n, every tie nonzero and distinct, in the order reached: bob,
    // then cid, then ann (her 80,000 came last).
    let tie = |u: &str| rows.iter().find(|r| r.0 == u).map(|r| r.3).expect("row");
    assert!(
        0 < tie("bob") && tie("bob") < tie("cid") && tie("cid") < tie("ann"),
        "{rows:?}"
    );
    // The outbox rows carry the ties the rows hold.
    let last = env.outbox("trial").await.pop().expect("outbox row");
    assert_eq!(last, ("ann".into(), 80_000, 2, tie("ann")));
    // The database's order of the 80,000s: (score, tie, user_id) ascending.
    let order: Vec<String> = env
        .client
        .query(
            "SELECT user_id FROM user_scores WHERE board_id = 'trial'
             ORDER BY score, tie, user_id",
            &[],
        )
        .await
        .expect("order")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(order, vec!["bob", "cid", "ann"]);
}

#[tokio::test]
async fn latest_replaces_and_keeps_the_tie_of_an_unchanged_score() {
    let env = env().await;
    env.declare("now", "latest", "descending", "earliest", -100, 100)
        .await;
    env.post(
        "now",
        Uuid::new_v4(),
        "ann",
        "score",
        10,
        Some(json!({"a": 1})),
    )
    .await
    .expect("1");
    let t1 = env.rows("now").await[0].3;
    assert!(t1 < 0, "descending earliest ties are negative: {t1}");
    let o = env
        .post("now", Uuid::new_v4(), "ann", "score", 10, None)
        .await
        .expect("same");
    assert_eq!(at(&o), (10, 2, true, false));
    // Same score: same tie; no metadata sent: the prior kept.
    assert_eq!(
        env.rows("now").await,
        vec![("ann".into(), 10, 2, t1, Some(r#"{"a": 1}"#.into()))]
    );
    let o = env
        .post("now", Uuid::new_v4(), "ann", "score", -5, None)
        .await
        .expect("lower");
    assert_eq!(at(&o), (-5, 3, true, false));
    let t3 = env.rows("now").await[0].3;
    assert!(t3 < t1, "a new score is reached later: {t3} vs {t1}");
    assert_eq!(
        env.post("now", Uuid::new_v4(), "ann", "score", 101, None)
            .await,
        Err("score_out_of_range".into())
    );
}

#[tokio::test]
async fn add_checks_its_delta_and_the_resulting_score_against_the_board() {
    let env = env().await;
    env.declare("week", "add", "descending", "user_id", 0, 100)
        .await;
    let o = env
        .post("week", Uuid::new_v4(), "ann", "delta", 50, None)
        .await
        .expect("1");
    assert_eq!(at(&o), (50, 1, true, false));
    assert_eq!(
        env.post("week", Uuid::new_v4(), "ann", "delta", 51, None)
            .await,
        Err("delta_out_of_range".into())
    );
    env.post("week", Uuid::new_v4(), "ann", "delta", 50, None)
        .await
        .expect("2");
    // 100 + 1 leaves [0, 100], decided in the statement: nothing written.
    let refused = Uuid::new_v4();
    assert_eq!(
        env.post("week", refused, "ann", "delta", 1, None).await,
        Err("score_out_of_range".into())
    );
    assert_eq!(
        env.rows("week").await,
        vec![("ann".into(), 100, 2, 0, None)]
    );
    assert_eq!(env.outbox("week").await.len(), 2);
    // A refused command used no event id.
    let used: i64 = env
        .client
        .query_one(
            "SELECT count(*) FROM score_events WHERE event_id = $1",
            &[&refused],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(used, 0);
    assert_eq!(
        env.post("week", Uuid::new_v4(), "ann", "score", 1, None)
            .await,
        Err("wrong_value_field".into())
    );
}

#[tokio::test]
async fn a_command_validated_against_an_old_revision_is_refused_and_writes_nothing() {
    let env = env().await;
    env.declare("rev", "latest", "descending", "user_id", 0, 100)
        .await;
    let def = env.definition("rev").await;
    // The definition changes after the command was validated.
    env.client
        .execute(
            "UPDATE board_definitions SET max_score = 50, revision = revision + 1
             WHERE board_id = 'rev'",
            &[],
        )
        .await
        .expect("update");
    let n = Submitted::One(Number::from(80));
    let cmd = board::command(
        &def,
        &Uuid::new_v4().to_string(),
        "ann",
        Some(&n),
        None,
        None,
    )
    .expect("valid under the old revision");
    assert!(matches!(
        apply_score_command(&env.db, &cmd, None).await,
        Err(StoreError::DefinitionChanged)
    ));
    assert!(env.rows("rev").await.is_empty());
    // Against the current revision the same value is out of range.
    let fresh = env.definition("rev").await;
    assert_eq!(
        board::command(
            &fresh,
            &Uuid::new_v4().to_string(),
            "ann",
            Some(&n),
            None,
            None
        ),
        Err(ValidationError::BoardScoreOutOfRange { min: 0, max: 50 })
    );
}

#[tokio::test]
async fn concurrent_best_submissions_keep_the_best_of_all() {
    let env = env().await;
    env.declare("race", "best", "descending", "earliest", 0, 1_000_000)
        .await;
    let mut tasks = Vec::new();
    for i in 0..40_i64 {
        let db = env.db.clone();
        let def = env.definition("race").await;
        tasks.push(tokio::spawn(async move {
            let n = Submitted::One(Number::from((i * 37) % 101));
            let cmd = board::command(
                &def,
                &Uuid::new_v4().to_string(),
                "ann",
                Some(&n),
                None,
                None,
            )
            .expect("valid");
            apply_score_command(&db, &cmd, None).await.expect("applied")
        }));
    }
    let mut improved = 0;
    for t in tasks {
        improved += i64::from(t.await.expect("task").improved);
    }
    let rows = env.rows("race").await;
    let best = (0..40_i64).map(|i| (i * 37) % 101).max().expect("max");
    assert_eq!(rows[0].1, best);
    // Each improvement is one version and one outbox row, nothing else.
    assert_eq!(rows[0].2, improved);
    assert_eq!(env.outbox("race").await.len() as i64, improved);
}
