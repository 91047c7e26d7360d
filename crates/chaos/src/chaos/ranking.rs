//! A board's entries in rank order, from PostgreSQL's rows and from a read's page.

use ledgerboard_core::board::definition::Sort;

use crate::stack::Placed;

/// A page's entries in rank order as (user, score): a read's `entries`, a closed period's
/// `standings`; a malformed entry shows as a user "" or a score of `i64::MIN`, so that it never
/// equals the source.
pub(super) fn page_scores(entries: &serde_json::Value) -> Vec<(String, i64)> {
    entries
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["user_id"].as_str().unwrap_or_default().to_owned(),
                        e["score"].as_i64().unwrap_or(i64::MIN),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The board in rank order, as (user, score): the tuple (score, tie, user id in byte order),
/// greatest first on a descending board, smallest first on an ascending one, as every read
/// orders it (`definition::Order`).
pub(super) fn ranking(sort: Sort, source: &Placed) -> Vec<(String, i64)> {
    let mut entries: Vec<(i64, i64, &[u8], &str)> = source
        .iter()
        .map(|(u, (s, _, t))| (*s, *t, u.as_bytes(), u.as_str()))
        .collect();
    entries.sort();
    if sort == Sort::Descending {
        entries.reverse();
    }
    entries
        .into_iter()
        .map(|(s, _, _, u)| (u.to_owned(), s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn placed(entries: &[(&str, i64, i64)]) -> Placed {
        entries
            .iter()
            .map(|(user, score, tie)| ((*user).to_owned(), (*score, 1, *tie)))
            .collect()
    }

    fn users(ranked: &[(String, i64)]) -> Vec<&str> {
        ranked.iter().map(|(u, _)| u.as_str()).collect()
    }

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
        let ranked = ranking(Sort::Descending, &source);
        assert_eq!(users(&ranked), ["b", "e", "d", "c", "a"]);
        assert_eq!(ranked[0], ("b".to_owned(), 9));
    }

    #[test]
    fn ascending_ranks_the_smallest_score_tie_and_user_first() {
        let source = placed(&[("a", 5, 2), ("b", 1, 9), ("c", 5, 1), ("B", 5, 1)]);
        // "B" sorts before "c" by bytes.
        assert_eq!(
            users(&ranking(Sort::Ascending, &source)),
            ["b", "B", "c", "a"]
        );
    }

    #[test]
    fn a_page_reads_as_user_and_score_with_malformed_entries_never_equal() {
        let page = json!([
            {"user_id": "u1", "score": 9, "version": 2},
            {"user_id": "u2"},
            {"score": 3},
        ]);
        assert_eq!(
            page_scores(&page),
            [
                ("u1".to_owned(), 9),
                ("u2".to_owned(), i64::MIN),
                (String::new(), 3)
            ]
        );
        assert!(page_scores(&json!(null)).is_empty());
    }
}
