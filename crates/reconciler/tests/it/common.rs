//! What the reconciler's tests share: the settings of the two daemons they run, a board
//! projected by real projector batches, the reconciler on a test's settings, one pass, and
//! hand edits of board b's keys in Redis.

#![allow(dead_code)] // each test file uses its own part

use ledgerboard_core::model::BoardId;
use ledgerboard_projector::Projector;
use ledgerboard_reconciler::Reconciler;
use ledgerboard_reconciler::pass::PassOptions;
use ledgerboard_reconciler::report::PassReport;

/// The daemons' sections, the one copy in the testkit.
pub use ledgerboard_testkit::stack::Stack;
pub type Settings = ledgerboard_testkit::stack::StackSettings;
pub type TestEnv = ledgerboard_testkit::TestEnv<Stack>;

/// Runs real projector batches until nothing is claimed.
pub async fn drain(env: &TestEnv) {
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let mut client = env.database().client().await.expect("client");
    while projector
        .worker(0)
        .batch(&mut client)
        .await
        .expect("batch")
        .claimed
        > 0
    {}
}

/// A board b of `users` users, projected by real projector batches until nothing is pending.
pub async fn projected_env(users: i64, tweak: impl FnOnce(&mut Settings)) -> TestEnv {
    let env = TestEnv::new(tweak).await;
    env.seed("b", users, users).await;
    drain(&env).await;
    assert_eq!(env.projection("b").await, env.source("b").await);
    env
}

pub fn reconciler(env: &TestEnv) -> Reconciler {
    Reconciler::new(env.settings.clone(), env.database(), env.store())
}

pub fn options(env: &TestEnv) -> PassOptions {
    PassOptions::from_settings(&env.settings.reconciler)
}

/// One pass with the test's settings, under the lock.
pub async fn pass(env: &TestEnv) -> PassReport {
    reconciler(env).run_once(&options(env)).await.expect("pass")
}

/// One dry-run pass (it classifies, writes nothing): what Redis holds before any repair.
pub async fn dry_pass(env: &TestEnv) -> PassReport {
    let mut dry = options(env);
    dry.dry_run = true;
    reconciler(env).run_once(&dry).await.expect("dry run")
}

/// Runs a Redis command in the test's namespace, `{z}`/`{v}` standing for board b's keys.
pub async fn redis_edit(env: &TestEnv, args: &[&str]) {
    let store = env.store();
    let board = BoardId::parse("b").expect("board");
    let (z, v) = (store.keys().scores(&board), store.keys().versions(&board));
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(a.replace("{z}", &z).replace("{v}", &v));
    }
    let mut conn = store.connection().await.expect("redis");
    let _: redis::Value = cmd.query_async(&mut conn).await.expect("edit");
}
