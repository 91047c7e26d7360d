//! The next period of a board that resets is sealed before it starts (reconciler/periods.rs,
//! `seal_next`): when it becomes current its projection is whole already, so its first reads
//! do not fall back to PostgreSQL waiting for a rebuild a read asked for. Real PostgreSQL and
//! Redis, the reconciler's whole pass.

use crate::common;

use std::time::Duration;

use common::*;
use ledgerboard_core::board::definition::{self, Declaration};
use ledgerboard_core::board::definition::{Operator, Reset};
use ledgerboard_core::board::periods;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::{self, Seal};

#[tokio::test]
async fn a_pass_seals_the_next_period_before_it_starts() {
    let env = TestEnv::new(|_| {}).await;
    let (db, store) = (env.database(), env.store());
    let board = BoardId::parse("rounds").expect("board");
    definition::declare(
        &db,
        &board,
        &Declaration {
            operator: Some(Operator::Add),
            // Long enough that the pass ends well inside the period it looked at.
            reset: Some(Reset::Every(6)),
            ..Declaration::default()
        },
    )
    .await
    .expect("declare");
    let now = periods::current(&db, &board)
        .await
        .expect("periods")
        .expect("rounds resets");
    let next = now
        .next
        .clone()
        .expect("a scheduled board knows its next period");
    assert!(next > now.current);
    let next_board = board.in_period(&next).expect("period");
    assert_eq!(
        read::board_seal(&store, &next_board).await.expect("seal"),
        Seal::Missing
    );

    pass(&env).await;
    assert_eq!(
        read::board_seal(&store, &next_board).await.expect("seal"),
        Seal::Whole,
        "the pass sealed {next_board} ahead"
    );

    // When it starts, it is current and whole, with nothing rebuilt since.
    ledgerboard_testkit::wait_until(Duration::from_secs(8), || async {
        periods::current(&db, &board)
            .await
            .expect("periods")
            .expect("rounds resets")
            .current
            == next
    })
    .await
    .unwrap_or_else(|| panic!("{next} never became current"));
    assert_eq!(
        read::board_seal(&store, &next_board).await.expect("seal"),
        Seal::Whole
    );
}
