//! A board's entries in rank order, from PostgreSQL's rows and from a read's page.

use ledgerboard_core::definition::Sort;

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
