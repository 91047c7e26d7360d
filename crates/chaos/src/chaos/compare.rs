//! The projection compared with PostgreSQL before any reconciliation pass: after the drain
//! (`before_repair`), and again after the moderation that follows the faults.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::Seal;

use super::api::bounded_read;
use super::ranking::{page_scores, ranking};
use super::specs::{SPECS, spec_of};
use crate::stack::{Placed, Stack};

/// How long a board that is not whole may take to be rebuilt: a failed rebuild is retried
/// after 10 s (`requests.rs`), so this leaves room for one failure.
pub(super) const REBUILD_LIMIT: Duration = Duration::from_secs(30);

/// The comparison of every board with PostgreSQL after the drain, before any pass.
#[derive(Default)]
pub(super) struct BeforeRepair {
    pub(super) whole: usize,
    pub(super) not_whole: usize,
    /// Boards with no visible entry (never sealed: see `before_repair`).
    pub(super) empty: usize,
    /// Boards not whole whose bounded read answered from PostgreSQL with its entries.
    pub(super) read_from_database: usize,
    /// Boards not whole that the requested rebuild made whole and equal to PostgreSQL.
    pub(super) rebuilt_equal: usize,
    /// The longest of those rebuilds, from the read that asked for it.
    pub(super) rebuilt_max: Option<Duration>,
    /// Members of whole boards that differed, each at a member chaos corrupted.
    pub(super) corrupted_differences: usize,
    pub(super) problems: Vec<String>,
}

/// Every board compared with PostgreSQL after the drain and before any pass. A whole board
/// (its seal and its keys read in one MULTI/EXEC) must equal `user_scores`, except at members
/// chaos corrupted. A board that is not whole is never counted as equal: a bounded read must
/// answer from PostgreSQL with PostgreSQL's entries, and the rebuild that read requested must
/// make the board whole and equal within [`REBUILD_LIMIT`]. Every board is read before any is
/// waited for, so that the rebuilds the reads requested run together (a Redis lost during the
/// load leaves every period that ended before it not whole, and nothing but a read asks for
/// them again).
pub(super) async fn before_repair(
    stack: &Stack,
    boards: &[BoardId],
    corrupted: &BTreeSet<(String, String)>,
) -> anyhow::Result<BeforeRepair> {
    let mut out = BeforeRepair::default();
    let mut rebuilding = Vec::new();
    for id in boards {
        let board = id.as_str();
        let source = stack.placed_source(id).await?;
        let (seal, projection) = stack.sealed_projection(id).await?;
        if source.is_empty() && seal != Seal::Whole {
            // No visible entry (a period whose every entry a ban hid): a rebuild switches such
            // a board in unsealed (`reconciler/src/rebuild.rs`: a board that does not exist
            // leaves nothing in Redis), so it is never whole. It must hold nothing, and a
            // bounded read must answer from PostgreSQL with nothing.
            out.empty += 1;
            out.problems.extend(
                projection_differences(board, &source, &projection)
                    .into_iter()
                    .map(|(_, d)| d),
            );
            match bounded_read(stack, id, "limit=1000").await? {
                Some(read)
                    if read["freshness"]["source"] == "database"
                        && page_scores(&read["entries"]).is_empty() => {}
                other => out.problems.push(format!(
                    "{board}: no visible entry, but a bounded read answered {other:?}"
                )),
            }
            continue;
        }
        if seal == Seal::Whole {
            out.whole += 1;
            for (user, d) in projection_differences(board, &source, &projection) {
                if corrupted.contains(&(board.to_owned(), user.clone())) {
                    out.corrupted_differences += 1;
                } else {
                    out.problems.push(d);
                }
            }
            continue;
        }
        out.not_whole += 1;
        let asked = Instant::now();
        // limit=1000 covers every member (USERS = 200); the consistency is the default.
        let read = bounded_read(stack, id, "limit=1000").await?;
        match &read {
            None => out.problems.push(format!(
                "{board}: not whole ({seal:?}) and the bounded read failed"
            )),
            Some(read) => {
                let f = &read["freshness"];
                if f["source"] != "database" && f["projection"] != "whole" {
                    out.problems.push(format!(
                        "{board}: not whole ({seal:?}) but a bounded read answered from {} \
                         with projection {}",
                        f["source"], f["projection"]
                    ));
                } else if f["source"] == "database" {
                    out.read_from_database += 1;
                }
                let want = ranking(spec_of(id).unwrap_or(&SPECS[0]).order(), &source);
                let got = page_scores(&read["entries"]);
                if got != want {
                    out.problems.push(format!(
                        "{board}: the bounded read of a board not whole gave {} entries, not \
                         PostgreSQL's {} in its order",
                        got.len(),
                        want.len()
                    ));
                }
            }
        }
        let read_freshness = read.as_ref().map(|r| r["freshness"].to_string());
        rebuilding.push((id, source, asked, read_freshness));
    }
    // The reads asked for the rebuilds; the reconciler daemon serves them between passes.
    for (id, source, asked, read_freshness) in rebuilding {
        let board = id.as_str();
        loop {
            let (seal, projection) = stack.sealed_projection(id).await?;
            if seal == Seal::Whole {
                let differences = projection_differences(board, &source, &projection);
                if differences.is_empty() {
                    out.rebuilt_equal += 1;
                    let took = asked.elapsed();
                    out.rebuilt_max = Some(out.rebuilt_max.map_or(took, |m| m.max(took)));
                } else {
                    out.problems.extend(differences.into_iter().map(|(_, d)| d));
                }
                break;
            }
            if asked.elapsed() > REBUILD_LIMIT {
                out.problems.push(format!(
                    "{board}: still not whole ({seal:?}) {REBUILD_LIMIT:?} after the read (its freshness: {})",
                    read_freshness.as_deref().unwrap_or("none")
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(out)
}

/// The members where the projection differs from the source, each with its description.
/// Scores, versions and keys are compared: on a board with columns a member spelt with another
/// value of another column, and on an earliest board one spelt with another tie, stands
/// elsewhere among equal scores (and a read would state other `scores`).
fn projection_differences(
    board: &str,
    source: &Placed,
    projection: &Placed,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (user, want) in source {
        if projection.get(user) != Some(want) {
            out.push((
                user.clone(),
                format!(
                    "{board}/{user}: Redis holds {:?} before repair, PostgreSQL {want:?}",
                    projection.get(user)
                ),
            ));
        }
    }
    for user in projection.keys().filter(|u| !source.contains_key(*u)) {
        out.push((
            user.clone(),
            format!("{board}/{user}: Redis holds a member PostgreSQL does not, before repair"),
        ));
    }
    out
}

/// The comparison after the moderation that follows the faults.
#[derive(Default)]
pub(super) struct AfterModeration {
    /// Boards whole (or with no visible entry and nothing in Redis) and equal to PostgreSQL.
    pub(super) equal: usize,
    pub(super) problems: Vec<String>,
}

/// Every board compared with PostgreSQL again, once the moderation that followed the faults is
/// drained: no rebuild follows it, so a board that is not whole, or differs but at a member
/// chaos corrupted, is the projector's own handling of an action.
pub(super) async fn after_moderation(
    stack: &Stack,
    boards: &[BoardId],
    corrupted: &BTreeSet<(String, String)>,
) -> anyhow::Result<AfterModeration> {
    let mut out = AfterModeration::default();
    for id in boards {
        let board = id.as_str();
        let source = stack.placed_source(id).await?;
        let (seal, projection) = stack.sealed_projection(id).await?;
        // A board with no visible entry is never sealed (see `before_repair`); it must hold
        // nothing, which the comparison below checks.
        if seal != Seal::Whole && !source.is_empty() {
            out.problems.push(format!(
                "{board}: not whole ({seal:?}) after the moderation that followed the faults"
            ));
            continue;
        }
        let differences: Vec<String> = projection_differences(board, &source, &projection)
            .into_iter()
            .filter(|(user, _)| !corrupted.contains(&(board.to_owned(), user.clone())))
            .map(|(_, d)| format!("after the moderation that followed the faults: {d}"))
            .collect();
        if differences.is_empty() {
            out.equal += 1;
        }
        out.problems.extend(differences);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledgerboard_core::model::Key;

    fn placed(entries: &[(&str, (i64, i64, i64))]) -> Placed {
        entries
            .iter()
            .map(|(u, (s, v, t))| ((*u).to_owned(), (*s, *v, Key::tie(*t))))
            .collect()
    }

    #[test]
    fn an_equal_projection_has_no_difference() {
        let source = placed(&[("u1", (5, 1, -1)), ("u2", (7, 2, -2))]);
        assert!(projection_differences("c", &source, &source.clone()).is_empty());
    }

    #[test]
    fn score_version_and_tie_are_each_compared_and_every_member_both_ways() {
        let source = placed(&[
            ("u1", (5, 1, -1)),
            ("u2", (7, 2, -2)),
            ("u3", (9, 1, -3)),
            ("u4", (1, 1, -4)),
        ]);
        let projection = placed(&[
            ("u1", (6, 1, -1)),
            ("u2", (7, 3, -2)),
            ("u3", (9, 1, -5)),
            ("u5", (2, 1, -6)),
        ]);
        let differences = projection_differences("c", &source, &projection);
        let users: Vec<&str> = differences.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(users, ["u1", "u2", "u3", "u4", "u5"]);
        assert_eq!(
            differences[3].1,
            "c/u4: Redis holds None before repair, PostgreSQL (1, 1, Key { columns: 1, rest: [0, 0], tie: -4 })"
        );
        assert_eq!(
            differences[4].1,
            "c/u5: Redis holds a member PostgreSQL does not, before repair"
        );
    }

    #[test]
    fn every_other_column_and_the_column_count_are_compared() {
        let at = |columns: u8, rest: [i64; 2]| {
            (
                4,
                2,
                Key {
                    columns,
                    rest,
                    tie: -1,
                },
            )
        };
        let source: Placed = [
            ("u1", at(3, [-1, 3])),
            ("u2", at(3, [-1, 3])),
            ("u3", at(3, [-1, 3])),
        ]
        .into_iter()
        .map(|(u, v)| (u.to_owned(), v))
        .collect();
        let mut projection = source.clone();
        // Another second column, another third, and the same values spelt as two columns.
        projection.insert("u1".to_owned(), at(3, [-2, 3]));
        projection.insert("u2".to_owned(), at(3, [-1, 4]));
        projection.insert("u3".to_owned(), at(2, [-1, 3]));
        let differences = projection_differences("e", &source, &projection);
        let users: Vec<&str> = differences.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(users, ["u1", "u2", "u3"]);
    }
}
