//! One order on both paths, for every kind of board (issue 21, item 3): 10,000 entries with
//! many ties per board, and every read (pages by offset and by cursor, cursors whose entry is
//! gone, around, one member, ids) in every rank mode compared between `consistency=strong`
//! (PostgreSQL) and `consistency=eventual` (Redis). The PostgreSQL walk is also checked
//! against the order and ranks computed here, so that two paths wrong the same way fail too.

use crate::common;

use axum::http::StatusCode;
use common::{TestEnv, app_with, get, same_answer, urlencode};
use ledgerboard_core::board::definition::{Order, Sort, TieBreak};
use ledgerboard_core::config::Millis;
use ledgerboard_core::ranking::Cursor;

/// A board kind: its id, its definition row (None: undeclared) and its order.
struct Kind {
    board: &'static str,
    operator: Option<&'static str>,
    order: Order,
}

const fn kind(
    board: &'static str,
    operator: Option<&'static str>,
    sort: Sort,
    tie_break: TieBreak,
) -> Kind {
    Kind {
        board,
        operator,
        order: Order::of(sort, tie_break),
    }
}

const KINDS: [Kind; 5] = [
    kind("add-desc-id", None, Sort::Descending, TieBreak::UserId),
    kind(
        "best-asc-early",
        Some("best"),
        Sort::Ascending,
        TieBreak::Earliest,
    ),
    kind(
        "best-desc-early",
        Some("best"),
        Sort::Descending,
        TieBreak::Earliest,
    ),
    kind(
        "latest-asc-id",
        Some("latest"),
        Sort::Ascending,
        TieBreak::UserId,
    ),
    kind(
        "latest-desc-early",
        Some("latest"),
        Sort::Descending,
        TieBreak::Earliest,
    ),
];

const MODES: [&str; 3] = ["ordinal", "dense", "competition"];

/// One entry as the board holds it.
#[derive(Clone)]
struct Entry {
    user: String,
    score: i64,
    tie: i64,
}

/// 10,000 entries: ids in mixed case, digits and non-ASCII letters; 50 distinct scores (200
/// entries at each); on earliest boards a tie drawn in an order unrelated to the ids, signed
/// as the command statements sign it (`Order::tie_sign`).
fn entries(order: Order) -> Vec<Entry> {
    let prefixes = [
        "a", "A", "é", "É", "0", "9", "z", "Z", "ß", "日本", "ÿ", "_",
    ];
    (0..10_000_i64)
        .map(|i| Entry {
            user: format!("{}{}", prefixes[i as usize % prefixes.len()], i / 7),
            score: (i * 37) % 50 - 20,
            // 10,007 is prime: i * 7,919 mod 10,007 + 1 is a permutation of distinct values.
            tie: order.tie_sign() * ((i * 7_919) % 10_007 + 1),
        })
        .collect()
}

/// The board's order computed here: the tuple (score, tie, user id bytes), greater first on
/// descending boards.
fn sorted(order: Order, mut entries: Vec<Entry>) -> Vec<Entry> {
    entries.sort_by(|a, b| {
        let ka = (a.score, a.tie, a.user.as_bytes());
        let kb = (b.score, b.tie, b.user.as_bytes());
        match order.sort {
            Sort::Descending => kb.cmp(&ka),
            Sort::Ascending => ka.cmp(&kb),
        }
    });
    entries
}

/// Writes the board's definition and rows to PostgreSQL, then rebuilds its projection in
/// Redis with the reconciler's rebuild (members spelt with their tie keys, `:d`, the seal with
/// `card` and `dcard`).
async fn board(env: &TestEnv, kind: &Kind, entries: &[Entry]) {
    let client = env.db.client().await;
    if let Some(operator) = kind.operator {
        client
            .execute(
                "INSERT INTO board_definitions (board_id, operator, sort, tie_break, min_score, max_score)
                 VALUES ($1, $2, $3, $4, -1000, 1000)",
                &[
                    &kind.board,
                    &operator,
                    &kind.order.sort.as_str(),
                    &kind.order.tie_break.as_str(),
                ],
            )
            .await
            .expect("definition");
    }
    let users: Vec<&str> = entries.iter().map(|e| e.user.as_str()).collect();
    let scores: Vec<i64> = entries.iter().map(|e| e.score).collect();
    let ties: Vec<i64> = entries.iter().map(|e| e.tie).collect();
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version, tie)
             SELECT $1, u, s, 1, t FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS x(u, s, t)",
            &[&kind.board, &users, &scores, &ties],
        )
        .await
        .expect("rows");

    // The projection as the reconciler's rebuild writes it (rebuild_chunk.lua, then the switch
    // that seals the board with `card` and, as it is marked dense, `dcard`): the path every
    // board takes back to whole.
    common::seal(env, kind.board).await;
}

/// Ranks computed here from the sorted entries, for each mode.
fn expected_ranks(sorted: &[Entry], mode: &str) -> Vec<u64> {
    let mut out = Vec::with_capacity(sorted.len());
    let (mut competition, mut dense) = (0, 0);
    for (i, e) in sorted.iter().enumerate() {
        if i == 0 || sorted[i - 1].score != e.score {
            competition = i as u64 + 1;
            dense += 1;
        }
        out.push(match mode {
            "ordinal" => i as u64 + 1,
            "dense" => dense,
            _ => competition,
        });
    }
    out
}

#[tokio::test]
async fn both_paths_agree_on_every_read_of_every_board_kind() {
    // The shared Redis also serves other tests' rebuilds: a 1 s response timeout (the
    // default) turned one read into a 503 once on a loaded machine. 2.5 s keeps a batch's
    // worst wait (1 s + 3 x 2.5 s) below the sessions' idle timeout, as settings require.
    let env = TestEnv::new(|s| s.redis.response_timeout_ms = Millis::of(2_500)).await;
    let app = app_with(&env.settings);
    for kind in &KINDS {
        let rows = entries(kind.order);
        board(&env, kind, &rows).await;
        let expected = sorted(kind.order, rows.clone());
        let total = expected.len() as u64;
        let b = kind.board;
        for mode in MODES {
            let ranks = expected_ranks(&expected, mode);
            // Pages by offset.
            for (offset, limit) in [(0, 1), (0, 100), (37, 100), (5_000, 1_000), (9_990, 1_000)] {
                let page = same_answer(
                    &app,
                    &format!("/v1/boards/{b}/top?offset={offset}&limit={limit}&rank_mode={mode}"),
                )
                .await;
                assert_eq!(page["total"], total, "{b} {mode}");
                let e = page["entries"].as_array().expect("entries");
                assert_eq!(e.len() as i64, (total as i64 - offset).clamp(0, limit));
                assert_eq!(e[0]["rank"], ranks[offset as usize], "{b} {mode} {offset}");
            }
            // The whole board by cursor: the same pages, and the order and ranks computed
            // here.
            let mut walked = Vec::new();
            let mut uri = format!("/v1/boards/{b}/top?limit=1000&rank_mode={mode}");
            loop {
                let page = same_answer(&app, &uri).await;
                let e = page["entries"].as_array().expect("entries").clone();
                walked.extend(e);
                match page["next"].as_str() {
                    Some(next) => {
                        uri = format!("/v1/boards/{b}/top?limit=1000&rank_mode={mode}&after={next}")
                    }
                    None => break,
                }
            }
            assert_eq!(walked.len(), expected.len(), "{b} {mode}");
            for (i, (got, want)) in walked.iter().zip(&expected).enumerate() {
                assert_eq!(
                    (
                        got["user_id"].as_str(),
                        got["score"].as_i64(),
                        got["rank"].as_u64()
                    ),
                    (Some(want.user.as_str()), Some(want.score), Some(ranks[i])),
                    "{b} {mode} position {}",
                    i + 1
                );
                let competition = expected_ranks(&expected, "competition")[i];
                let percentile = 100.0 * (total - competition + 1) as f64 / total as f64;
                assert_eq!(got["percentile"].as_f64(), Some(percentile));
            }
            // Cursors whose entry is not on the board: at an existing score, between and
            // around its entries (the projection's binary search, the database's row
            // comparison), and at a score no entry has. Ties as such a board has them: 0 on
            // user_id boards, never 0 on earliest ones.
            let earliest = kind.order.tie_break == TieBreak::Earliest;
            for (score, tie, user) in [
                (5, 5_000, "m"),
                (5, 1, "m"),
                (-20, 1, "A"),
                (29, 10_006, "\u{ff}"),
                (7, i64::MAX, "0"),
                (7, i64::MIN + 1, "0"),
                (1_000, 77, "x"),
                (-1_000, -77, "x"),
            ] {
                let after = |tie| {
                    Cursor {
                        score,
                        key: ledgerboard_core::model::Key::tie(tie),
                        user_id: user.into(),
                    }
                    .encode()
                };
                let (fits, misfit) = if earliest { (tie, 0) } else { (0, tie) };
                same_answer(
                    &app,
                    &format!(
                        "/v1/boards/{b}/top?limit=50&rank_mode={mode}&after={}",
                        after(fits)
                    ),
                )
                .await;
                // A cursor no page of this board gave: refused, not answered differently by
                // the two paths.
                let (status, body) = get(
                    &app,
                    &format!("/v1/boards/{b}/top?limit=50&after={}", after(misfit)),
                )
                .await;
                assert_eq!(
                    (status, body["error"]["code"].as_str()),
                    (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_cursor")),
                    "{b}"
                );
            }
            // Around, one member, and ids (a hundred at a time, some not on the board).
            for e in rows.iter().step_by(997) {
                let path = format!("/v1/boards/{b}/users/{}", urlencode(&e.user));
                same_answer(&app, &format!("{path}?rank_mode={mode}")).await;
                for radius in [0, 5, 100] {
                    let page = same_answer(
                        &app,
                        &format!("{path}/around?radius={radius}&rank_mode={mode}"),
                    )
                    .await;
                    assert!(
                        page["entries"]
                            .as_array()
                            .is_some_and(|x| x.iter().any(|y| y["user_id"] == e.user.as_str())),
                        "{b} {}",
                        e.user
                    );
                }
            }
            for chunk in rows.chunks(97).step_by(20) {
                let mut ids: Vec<String> = chunk.iter().map(|e| urlencode(&e.user)).collect();
                ids.extend(["nobody", "n%C3%B8body", "zz-missing"].map(String::from));
                let answer = same_answer(
                    &app,
                    &format!(
                        "/v1/boards/{b}/users?ids={}&rank_mode={mode}",
                        ids.join(",")
                    ),
                )
                .await;
                assert_eq!(answer["entries"].as_array().map(Vec::len), Some(97));
                assert_eq!(
                    answer["missing"],
                    serde_json::json!(["nobody", "nøbody", "zz-missing"])
                );
            }
        }
    }
}
