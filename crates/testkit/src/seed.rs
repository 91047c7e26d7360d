//! Bulk rows for tests that need a backlog or many boards.

/// Seeds `rows` outbox rows for `users` users of `board`: user i gets versions 1, 2, … in id
/// order, each with its own absolute score; `user_scores` holds each user's last one, so a
/// drained projection must equal `user_scores` exactly.
pub async fn seed_outbox(client: &tokio_postgres::Client, board: &str, users: i64, rows: i64) {
    client
        .execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
             SELECT gen_random_uuid(), $1, 'u' || lpad((g % $2::bigint)::text, 6, '0'), 1,
                    g * 7 - 1000, g / $2::bigint + 1
             FROM generate_series(0::bigint, $3::bigint - 1) AS g",
            &[&board, &users, &rows],
        )
        .await
        .expect("seed events");
    client
        .execute(
            "INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version)
             SELECT event_id, board_id, user_id, score, version FROM score_events
             WHERE board_id = $1 ORDER BY version, user_id",
            &[&board],
        )
        .await
        .expect("seed outbox");
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT DISTINCT ON (user_id) board_id, user_id, score, version FROM score_events
             WHERE board_id = $1 ORDER BY user_id, version DESC",
            &[&board],
        )
        .await
        .expect("seed scores");
}

/// Every board's members in PostgreSQL: board → user → (score, version).
pub async fn source_boards(
    client: &tokio_postgres::Client,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, (i64, i64)>> {
    let mut boards: std::collections::BTreeMap<String, std::collections::BTreeMap<_, _>> =
        std::collections::BTreeMap::new();
    for row in client
        .query(
            "SELECT board_id, user_id, score, version FROM user_scores",
            &[],
        )
        .await
        .expect("read user_scores")
    {
        boards
            .entry(row.get(0))
            .or_default()
            .insert(row.get(1), (row.get(2), row.get(3)));
    }
    boards
}

/// Seeds `rows` outbox rows over many boards with skewed traffic, in one arrival order: every
/// `cold_every`-th row is the only row of a cold board of its own (`cold-00000`, `cold-00001`, …), the
/// others go to `hot` hot boards (`hot-0`, …) of up to `hot_users` users each, whose versions
/// grow with the row. `user_scores` holds each member's last row, so a drained projection must
/// equal it exactly.
pub async fn seed_skewed_boards(
    client: &tokio_postgres::Client,
    rows: i64,
    cold_every: i64,
    hot: i64,
    hot_users: i64,
) {
    client
        .batch_execute(&format!(
            "CREATE TEMP TABLE seed AS
             SELECT g, gen_random_uuid() AS event_id,
                    CASE WHEN g % {cold_every} = 0 THEN 'cold-' || lpad((g / {cold_every})::text, 5, '0')
                         ELSE 'hot-' || (g % {hot}) END AS board_id,
                    CASE WHEN g % {cold_every} = 0 THEN 'u1'
                         ELSE 'u' || (g / {hot} % {hot_users}) END AS user_id,
                    g * 7 - 1000 AS score,
                    CASE WHEN g % {cold_every} = 0 THEN 1 ELSE g / ({hot} * {hot_users}) + 1 END AS version
             FROM generate_series(0::bigint, {rows} - 1) AS g;
             INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
                 SELECT event_id, board_id, user_id, 1, score, version FROM seed;
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version)
                 SELECT event_id, board_id, user_id, score, version FROM seed ORDER BY g;
             INSERT INTO user_scores (board_id, user_id, score, version)
                 SELECT DISTINCT ON (board_id, user_id) board_id, user_id, score, version
                 FROM seed ORDER BY board_id, user_id, version DESC;
             DROP TABLE seed;
             ANALYZE leaderboard_outbox;"
        ))
        .await
        .expect("seed skewed boards");
}
