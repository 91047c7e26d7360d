//! What the cli tests share about a board's periods, read from the database as a command would.

use std::time::Duration;

use ledgerboard_testkit::wait_until;

/// The id of `board`'s first period (the declaration's second: board_resets' first row).
pub async fn first_period(client: &tokio_postgres::Client, board: &str) -> String {
    client
        .query_one(
            "SELECT lb_period_id(min(starts_at)) FROM board_resets WHERE board_id = $1",
            &[&board],
        )
        .await
        .expect("first period")
        .get(0)
}

/// Waits until a command on `board` would land past `period_board` (`<board>~<period>`): a
/// reset opens the next period at the next whole second of the database clock.
pub async fn wait_for_the_next_period(
    client: &tokio_postgres::Client,
    board: &str,
    period_board: &str,
) {
    wait_until(Duration::from_secs(5), || async {
        let now: String = client
            .query_one("SELECT lb_command_board($1)", &[&board])
            .await
            .expect("current period")
            .get(0);
        now != period_board
    })
    .await
    .expect("the next period opens");
}
