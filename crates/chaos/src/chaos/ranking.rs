//! A board's entries in rank order, from PostgreSQL's rows and from a read's page.

use ledgerboard_core::model::{Key, Order, Sort};

use crate::stack::Placed;

/// Entries in rank order as (user, score, every column's value on a board with columns).
pub(super) type Ranked = Vec<(String, i64, Option<Vec<i64>>)>;

/// A page's entries in rank order: a read's `entries`, a closed period's `standings`; a
/// malformed entry shows as a user "", a score of `i64::MIN` or scores of `[i64::MIN]`, so
/// that it never equals the source.
pub(super) fn page_scores(entries: &serde_json::Value) -> Ranked {
    entries
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let scores = e.get("scores").map(|s| {
                        s.as_array()
                            .and_then(|s| s.iter().map(serde_json::Value::as_i64).collect())
                            .unwrap_or_else(|| vec![i64::MIN])
                    });
                    (
                        e["user_id"].as_str().unwrap_or_default().to_owned(),
                        e["score"].as_i64().unwrap_or(i64::MIN),
                        scores,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The board in rank order: the tuple (score, other columns in order-key form, tie, user id in
/// byte order), greatest first on a descending board, smallest first on an ascending one, as
/// every read orders it (`model::Order`); on a board with columns each entry with its value in
/// every column, as reads state them (`scores`).
pub(super) fn ranking(order: Order, source: &Placed) -> Ranked {
    let mut entries: Vec<(&String, &(i64, i64, Key))> = source.iter().collect();
    entries.sort_by(|(a, (sa, _, ka)), (b, (sb, _, kb))| {
        (sa, ka.rest, ka.tie, a.as_bytes()).cmp(&(sb, kb.rest, kb.tie, b.as_bytes()))
    });
    if order.sort == Sort::Descending {
        entries.reverse();
    }
    entries
        .into_iter()
        .map(|(user, (score, _, key))| {
            let scores = order
                .columns
                .several()
                .then(|| order.columns.values(*score, key.rest));
            (user.clone(), *score, scores)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledgerboard_core::model::{Columns, TieBreak};
    use serde_json::json;

    fn placed(entries: &[(&str, i64, i64)]) -> Placed {
        entries
            .iter()
            .map(|(user, score, tie)| ((*user).to_owned(), (*score, 1, Key::tie(*tie))))
            .collect()
    }

    fn users(ranked: &Ranked) -> Vec<&str> {
        ranked.iter().map(|(u, _, _)| u.as_str()).collect()
    }

    const DESC: Order = Order::of(Sort::Descending, TieBreak::UserId);
    const ASC: Order = Order::of(Sort::Ascending, TieBreak::UserId);

    #[test]
    fn descending_ranks_the_greatest_score_tie_and_user_first() {
        // Equal scores: the greater tie first (descending ties are negative: the earliest,
        // -1, ranks first), then the greater user id.
        let source = placed(&[
            ("a", 5, 0),
            ("b", 9, 0),
            ("c", 5, 0),
            ("d", 7, -2),
            ("e", 7, -1),
        ]);
        let ranked = ranking(DESC, &source);
        assert_eq!(users(&ranked), ["b", "e", "d", "c", "a"]);
        assert_eq!(ranked[0], ("b".to_owned(), 9, None));
    }

    #[test]
    fn ascending_ranks_the_smallest_score_tie_and_user_first() {
        let source = placed(&[("a", 5, 2), ("b", 1, 9), ("c", 5, 1), ("B", 5, 1)]);
        // "B" sorts before "c" by bytes.
        assert_eq!(users(&ranking(ASC, &source)), ["b", "B", "c", "a"]);
    }

    #[test]
    fn the_other_columns_rank_before_the_tie_each_in_its_own_order() {
        // Laps descending, time ascending (key: negated), pits descending. At 4 laps: time 1
        // beats time 2 whatever the pits and the tie; at time 1, 3 pits beat 2; equal tuples go
        // by the tie (the earliest, -1, first).
        let order = Order {
            sort: Sort::Descending,
            tie_break: TieBreak::Earliest,
            columns: Columns::of(&[Sort::Descending, Sort::Ascending, Sort::Descending])
                .expect("three"),
        };
        let at = |rest: [i64; 2], tie: i64| Key {
            columns: 3,
            rest,
            tie,
        };
        let source: Placed = [
            ("a", (4, 1, at([-2, 9], -1))),
            ("b", (4, 1, at([-1, 2], -2))),
            ("c", (4, 1, at([-1, 3], -5))),
            ("d", (4, 1, at([-1, 3], -4))),
            ("e", (5, 1, at([-9, 0], -9))),
        ]
        .into_iter()
        .map(|(u, v)| (u.to_owned(), v))
        .collect();
        let ranked = ranking(order, &source);
        assert_eq!(users(&ranked), ["e", "d", "c", "b", "a"]);
        // Reads state each column's value, time as submitted.
        assert_eq!(ranked[1], ("d".to_owned(), 4, Some(vec![4, 1, 3])));
        assert_eq!(ranked[4].2, Some(vec![4, 2, 9]));
    }

    #[test]
    fn a_page_reads_as_user_and_score_with_malformed_entries_never_equal() {
        let page = json!([
            {"user_id": "u1", "score": 9, "version": 2},
            {"user_id": "u2"},
            {"score": 3},
            {"user_id": "u4", "score": 4, "scores": [4, 7]},
            {"user_id": "u5", "score": 4, "scores": [4, "7"]},
        ]);
        assert_eq!(
            page_scores(&page),
            [
                ("u1".to_owned(), 9, None),
                ("u2".to_owned(), i64::MIN, None),
                (String::new(), 3, None),
                ("u4".to_owned(), 4, Some(vec![4, 7])),
                ("u5".to_owned(), 4, Some(vec![i64::MIN])),
            ]
        );
        assert!(page_scores(&json!(null)).is_empty());
    }
}
