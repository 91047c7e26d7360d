#[tokio::test]
async fn starts_refuses_an_unmigrated_database_and_stops_cleanly() {
    ledgerboard_testkit::check_daemon_lifecycle(
        env!("CARGO_BIN_EXE_ledgerboard-reconciler"),
        "ledgerboard-reconciler",
        &[],
    )
    .await;
}
