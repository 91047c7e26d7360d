//! One order on both paths for boards with columns (issue 37, item 2): for every combination
//! of three columns' orders and both tie breaks (and two boards of two columns), 10,000
//! entries with many ties in each column and values at ±(2^53 − 1), projected by the
//! reconciler's rebuild; every read (pages by offset and by cursor, cursors whose entry is
//! gone, around, one member, ids) in every rank mode compared between `consistency=strong`
//! (PostgreSQL) and `consistency=eventual` (Redis), and the walk checked against the order,
//! values and ranks computed here. Then a tuple edited by hand in Redis is `corrupt` to the
//! reconciler, repaired, and both paths agree again.

use crate::common;

use axum::Router;
use axum::http::StatusCode;
use common::{TestEnv, app_with, get, same_answer, urlencode};
use ledgerboard_core::board::definition::{Columns, Order, Sort, TieBreak};
use ledgerboard_core::config::Millis;
use ledgerboard_core::model::{BoardId, Key, MAX_ABS_SCORE};
use ledgerboard_core::projection::member;
use ledgerboard_core::ranking::Cursor;
use ledgerboard_reconciler::Reconciler;
use ledgerboard_reconciler::pass::PassOptions;
use serde_json::{Value, json};

/// A board of the test: its id and its order (the columns' orders in it).
struct Kind {
    board: String,
    orders: Vec<Sort>,
    order: Order,
}

fn kinds() -> Vec<Kind> {
    use Sort::*;
    let short = |s: Sort| if s == Descending { 'd' } else { 'a' };
    let mut combos: Vec<(Vec<Sort>, TieBreak)> = Vec::new();
    for first in [Descending, Ascending] {
        for second in [Descending, Ascending] {
            for third in [Descending, Ascending] {
                for tie in [TieBreak::UserId, TieBreak::Earliest] {
                    combos.push((vec![first, second, third], tie));
                }
            }
        }
    }
    // Two columns: a racing board (laps down, time up, the earliest first) and its mirror.
    combos.push((vec![Descending, Ascending], TieBreak::Earliest));
    combos.push((vec![Ascending, Descending], TieBreak::UserId));
    combos
        .into_iter()
        .map(|(orders, tie_break)| {
            let name: String = orders.iter().map(|&s| short(s)).collect();
            Kind {
                board: format!("cols-{name}-{}", tie_break.as_str()),
                order: Order {
                    sort: orders[0],
                    tie_break,
                    columns: Columns::of(&orders).expect("columns"),
                },
                orders,
            }
        })
        .collect()
}

const MODES: [&str; 3] = ["ordinal", "dense", "competition"];

/// One entry as the board holds it: its values as submitted, and its tie.
#[derive(Clone)]
struct Entry {
    user: String,
    values: [i64; 3],
    tie: i64,
}

impl Entry {
    /// The stored tuple: the score, then the other columns in order-key form.
    fn tuple(&self, order: Order) -> (i64, i64, i64) {
        let c = order.columns;
        (
            self.values[0],
            c.key(1, self.values[1]),
            c.key(2, self.values[2]),
        )
    }
}

/// 10,000 entries: 6, 7 and 11 distinct values in the three columns (about 26 entries share a
/// tuple, thousands a value of a column), every 500th at the bounds of a double's exact
/// integers, ids mixing cases, digits and non-ASCII; on earliest boards a tie drawn in an order
/// unrelated to the ids, signed as the statements sign it.
fn entries(kind: &Kind) -> Vec<Entry> {
    let prefixes = ["a", "A", "é", "0", "9", "z", "Z", "ß", "日本", "_"];
    let columns = kind.orders.len();
    (0..10_000_i64)
        .map(|i| {
            let mut values = [(i * 37) % 6 - 2, (i * 13) % 7 - 3, (i * 7) % 11 - 5];
            if i % 500 == 0 {
                let edge = if i % 1000 == 0 {
                    MAX_ABS_SCORE
                } else {
                    -MAX_ABS_SCORE
                };
                values = [edge, -edge, edge];
            }
            if columns < 3 {
                values[2] = 0;
            }
            Entry {
                user: format!("{}{}", prefixes[i as usize % prefixes.len()], i / 7),
                values,
                tie: kind.order.tie_sign() * ((i * 7_919) % 10_007 + 1),
            }
        })
        .collect()
}

fn sorted(order: Order, mut entries: Vec<Entry>) -> Vec<Entry> {
    entries.sort_by(|a, b| {
        let (a1, a2, a3) = a.tuple(order);
        let (b1, b2, b3) = b.tuple(order);
        let ka = (a1, a2, a3, a.tie, a.user.as_bytes());
        let kb = (b1, b2, b3, b.tie, b.user.as_bytes());
        match order.sort {
            Sort::Descending => kb.cmp(&ka),
            Sort::Ascending => ka.cmp(&kb),
        }
    });
    entries
}

/// Ranks computed here from the sorted entries: equal tuples share competition and dense ranks.
fn expected_ranks(order: Order, sorted: &[Entry], mode: &str) -> Vec<u64> {
    let mut out = Vec::with_capacity(sorted.len());
    let (mut competition, mut dense) = (0, 0);
    for (i, e) in sorted.iter().enumerate() {
        if i == 0 || sorted[i - 1].tuple(order) != e.tuple(order) {
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

/// The definition and the rows in PostgreSQL, then the projection as the reconciler's rebuild
/// writes it (members spelt with their columns, the distinct tuples, the seal).
async fn board(env: &TestEnv, kind: &Kind, entries: &[Entry]) {
    let client = env.db.client().await;
    let columns: Vec<Value> = kind
        .orders
        .iter()
        .enumerate()
        .map(|(i, o)| {
            json!({"name": format!("c{}", i + 1), "order": o.as_str(),
                   "min": -MAX_ABS_SCORE, "max": MAX_ABS_SCORE})
        })
        .collect();
    client
        .execute(
            "INSERT INTO board_definitions
                 (board_id, operator, sort, tie_break, min_score, max_score, columns)
             VALUES ($1, 'best', $2, $3, $4, $5, $6::text::jsonb)",
            &[
                &kind.board,
                &kind.order.sort.as_str(),
                &kind.order.tie_break.as_str(),
                &-MAX_ABS_SCORE,
                &MAX_ABS_SCORE,
                &Value::Array(columns).to_string(),
            ],
        )
        .await
        .expect("definition");
    let users: Vec<&str> = entries.iter().map(|e| e.user.as_str()).collect();
    let tuples: Vec<(i64, i64, i64)> = entries.iter().map(|e| e.tuple(kind.order)).collect();
    let scores: Vec<i64> = tuples.iter().map(|t| t.0).collect();
    let col2: Vec<i64> = tuples.iter().map(|t| t.1).collect();
    let col3: Vec<i64> = tuples.iter().map(|t| t.2).collect();
    let ties: Vec<i64> = entries.iter().map(|e| e.tie).collect();
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, columns, col2, col3, version, tie)
             SELECT $1, u, s, $2, c2, c3, 1, t
             FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
                  AS x(u, s, c2, c3, t)",
            &[
                &kind.board,
                &(kind.orders.len() as i16),
                &users,
                &scores,
                &col2,
                &col3,
                &ties,
            ],
        )
        .await
        .expect("rows");
    // As autovacuum would soon after: the visibility map lets the counts stay index-only.
    client
        .execute("VACUUM ANALYZE user_scores", &[])
        .await
        .expect("vacuum");
    common::seal(env, &kind.board).await;
}

/// Every read of one board in every mode, both paths, and the walk against `expected`.
async fn compare(app: &Router, kind: &Kind, rows: &[Entry], expected: &[Entry]) {
    let b = &kind.board;
    let total = expected.len() as u64;
    let n = kind.orders.len();
    for mode in MODES {
        let ranks = expected_ranks(kind.order, expected, mode);
        for (offset, limit) in [(4_321, 100), (9_990, 1_000)] {
            let page = same_answer(
                app,
                &format!("/v1/boards/{b}/top?offset={offset}&limit={limit}&rank_mode={mode}"),
            )
            .await;
            let e = page["entries"].as_array().expect("entries");
            assert_eq!(e[0]["rank"], ranks[offset as usize], "{b} {mode} {offset}");
        }
        let mut walked = Vec::new();
        let mut uri = format!("/v1/boards/{b}/top?limit=1000&rank_mode={mode}");
        loop {
            let page = same_answer(app, &uri).await;
            walked.extend(page["entries"].as_array().expect("entries").clone());
            match page["next"].as_str() {
                Some(next) => {
                    uri = format!("/v1/boards/{b}/top?limit=1000&rank_mode={mode}&after={next}")
                }
                None => break,
            }
        }
        assert_eq!(walked.len(), expected.len(), "{b} {mode}");
        let competition = expected_ranks(kind.order, expected, "competition");
        for (i, (got, want)) in walked.iter().zip(expected).enumerate() {
            assert_eq!(
                (
                    got["user_id"].as_str(),
                    got["score"].as_i64(),
                    got["scores"].clone(),
                    got["rank"].as_u64()
                ),
                (
                    Some(want.user.as_str()),
                    Some(want.values[0]),
                    json!(want.values[..n]),
                    Some(ranks[i])
                ),
                "{b} {mode} position {}",
                i + 1
            );
            let percentile = 100.0 * (total - competition[i] + 1) as f64 / total as f64;
            assert_eq!(got["percentile"].as_f64(), Some(percentile), "{b}");
        }
        // Cursors whose entry is not on the board: inside blocks of equal scores and equal
        // tuples (the projection's binary search, the database's row comparison), and past
        // the ends.
        let earliest = kind.order.tie_break == TieBreak::Earliest;
        for (score, rest, tie, user) in [
            (1, [2, -3], 5_000, "m"),
            (1, [2, 99], 1, "m"),
            (MAX_ABS_SCORE, [-MAX_ABS_SCORE, 0], 7, "\u{ff}"),
        ] {
            let key = |tie, columns: usize| Key {
                columns: columns as u8,
                rest,
                tie,
            };
            let cursor = |k: Key| {
                Cursor {
                    score,
                    key: k,
                    user_id: user.into(),
                }
                .encode()
            };
            let tie = if earliest { tie } else { 0 };
            same_answer(
                app,
                &format!(
                    "/v1/boards/{b}/top?limit=50&rank_mode={mode}&after={}",
                    cursor(key(tie, n))
                ),
            )
            .await;
            // A cursor of a board of other columns came from no page of this one.
            let other = if n == 3 { 2 } else { 3 };
            let misfits = if mode == "ordinal" {
                vec![key(tie, 1), key(tie, other)]
            } else {
                Vec::new()
            };
            for misfit in misfits {
                let (status, body) = get(
                    app,
                    &format!("/v1/boards/{b}/top?limit=50&after={}", cursor(misfit)),
                )
                .await;
                assert_eq!(
                    (status, body["error"]["code"].as_str()),
                    (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_cursor")),
                    "{b}"
                );
            }
        }
        for e in rows.iter().step_by(2_500) {
            let path = format!("/v1/boards/{b}/users/{}", urlencode(&e.user));
            let member = same_answer(app, &format!("{path}?rank_mode={mode}")).await;
            assert_eq!(member["scores"], json!(e.values[..n]), "{b}");
            same_answer(app, &format!("{path}/around?radius=7&rank_mode={mode}")).await;
        }
        for chunk in rows.chunks(97).skip(50).take(1) {
            let ids: Vec<String> = chunk.iter().map(|e| urlencode(&e.user)).collect();
            let answer = same_answer(
                app,
                &format!(
                    "/v1/boards/{b}/users?ids={},nobody&rank_mode={mode}",
                    ids.join(",")
                ),
            )
            .await;
            assert_eq!(answer["entries"].as_array().map(Vec::len), Some(97));
        }
    }
}

/// Edits one member's tuple by hand in Redis (its third column, or its second on a board of
/// two), in its spelling and its versions-hash value alike, so that it is well-formed and
/// wrong; answers the user edited.
async fn edit_a_tuple(env: &TestEnv, kind: &Kind, victim: &Entry) {
    let store = env.store();
    let board = BoardId::parse(&kind.board).expect("board");
    let (z, v) = (store.keys().scores(&board), store.keys().versions(&board));
    let (score, c2, c3) = victim.tuple(kind.order);
    let key = |rest: [i64; 2]| Key {
        columns: kind.orders.len() as u8,
        rest,
        tie: victim.tie,
    };
    let edited = if kind.orders.len() == 3 {
        [c2, c3 + 1]
    } else {
        [c2 + 1, 0]
    };
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::pipe()
        .atomic()
        .cmd("ZREM")
        .arg(&z)
        .arg(member::member(&victim.user, key([c2, c3])))
        .cmd("ZADD")
        .arg(&z)
        .arg(score)
        .arg(member::member(&victim.user, key(edited)))
        .cmd("HSET")
        .arg(&v)
        .arg(&victim.user)
        .arg(member::stored(1, key(edited)))
        .query_async(&mut conn)
        .await
        .expect("edit");
}

#[tokio::test]
async fn both_paths_agree_on_every_read_of_boards_with_columns() {
    // As board_orders.rs: a shared Redis serves other tests' rebuilds meanwhile.
    let env = TestEnv::new(|s| s.redis.response_timeout_ms = Millis::of(2_500)).await;
    let app = app_with(&env.settings);
    let reconciler = Reconciler::new(env.settings.clone(), env.database(), env.store());
    for (k, kind) in kinds().iter().enumerate() {
        let rows = entries(kind);
        board(&env, kind, &rows).await;
        let expected = sorted(kind.order, rows.clone());
        compare(&app, kind, &rows, &expected).await;

        // A tuple edited by hand: corrupt before any repair, then repaired, on a board every
        // few combinations (each pass walks a whole board).
        if k % 4 != 0 {
            continue;
        }
        let victim = &rows[4_242];
        edit_a_tuple(&env, kind, victim).await;
        let board = BoardId::parse(&kind.board).expect("board");
        let mut options = PassOptions::from_settings(&env.settings.reconciler);
        options.board = Some(board);
        options.dry_run = true;
        let seen = reconciler.run_once(&options).await.expect("dry run");
        assert_eq!(
            (seen.totals.corrupt, seen.totals.drift()),
            (1, 1),
            "{}: {:?}",
            kind.board,
            seen.totals
        );
        // Meanwhile the projection ranks the victim elsewhere than PostgreSQL does.
        let path = format!(
            "/v1/boards/{}/users/{}",
            kind.board,
            urlencode(&victim.user)
        );
        let (_, from_redis) = get(&app, &format!("{path}?consistency=eventual")).await;
        let (_, from_pg) = get(&app, &format!("{path}?consistency=strong")).await;
        assert_ne!(from_redis["scores"], from_pg["scores"], "{}", kind.board);
        options.dry_run = false;
        let fixed = reconciler.run_once(&options).await.expect("pass");
        assert_eq!(
            fixed.totals.repaired, 1,
            "{}: {:?}",
            kind.board, fixed.totals
        );
        for mode in MODES {
            same_answer(&app, &format!("{path}?rank_mode={mode}")).await;
            same_answer(&app, &format!("{path}/around?radius=20&rank_mode={mode}")).await;
        }
    }
}
