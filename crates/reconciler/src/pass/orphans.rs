//! The walk over the projection for members with no source row (orphans), after a board's
//! source rows were walked.

use ledgerboard_core::db::source;
use ledgerboard_core::model::{BoardId, Key};
use ledgerboard_core::projection::inspect::{self, Half};
use ledgerboard_core::projection::member;

use super::{Ctx, PassError, confirm, tally};
use crate::classify::Classification;
use crate::report::Counts;

/// Members of the projection with no source row: sorted-set members first (decoded to their
/// user id with `member::user_of`), then version-hash entries whose user has no member in the
/// sorted set. Each chunk of members is checked against PostgreSQL in one query. A sorted-set
/// member that does not decode (spelt by hand) is an orphan; so is a spelling of a user who has
/// a source row when the versions hash names another one (a stray tie key: only that member
/// goes).
pub(super) async fn orphans(
    ctx: Ctx<'_>,
    board: &BoardId,
    counts: &mut Counts,
    scan_scores: bool,
    scan_versions: bool,
) -> Result<(), PassError> {
    let Ctx {
        db,
        store,
        lock,
        options,
    } = ctx;
    let scans = [(Half::Scores, scan_scores), (Half::Versions, scan_versions)];
    for (half, _) in scans.into_iter().filter(|(_, wanted)| *wanted) {
        let mut cursor: u64 = 0;
        loop {
            let (next, spelt) =
                inspect::scan_members(store, board, half, cursor, options.chunk_size).await?;
            // (user, the member as spelt, its key); a malformed member has no user.
            let decoded: Vec<(Option<String>, String, Key)> = spelt
                .into_iter()
                .map(|m| match half {
                    Half::Scores => match member::user_of(&m) {
                        Some((user, key)) => (Some(user.to_owned()), m.clone(), key),
                        None => (None, m, Key::default()),
                    },
                    Half::Versions => (Some(m), String::new(), Key::default()),
                })
                .collect();
            let users: Vec<String> = decoded.iter().filter_map(|(u, _, _)| u.clone()).collect();
            let observed = inspect::observe(store, board, users.iter().map(String::as_str)).await?;
            let mut observed = users.iter().cloned().zip(observed);
            let existing = source::existing(db, board, &users).await?;
            let mut found: Vec<inspect::Orphan> = Vec::new();
            for (user, spelling, key) in decoded {
                // (user, the stored value observed, whether the user's whole entry goes)
                let (user, observed_version, whole) = match user {
                    // Not a member any writer spells: it goes, whoever it seems to name.
                    None => (String::new(), String::new(), false),
                    Some(user) => {
                        let Some((_, seen)) = observed.next() else {
                            break;
                        };
                        let named_key = seen.stored().map(|(_, k)| k);
                        if existing.contains(&user) {
                            // A source member: judged in the chunk walk, unless this is a
                            // spelling its stored value does not name (the named one, or its
                            // absence, is judged there and repaired).
                            if half != Half::Scores || named_key.is_none_or(|k| k == key) {
                                continue;
                            }
                            (user, seen.version.unwrap_or_default(), false)
                        } else if half == Half::Versions && seen.score.is_some() {
                            // In the hash pass, members still in the sorted set were judged in
                            // the first.
                            continue;
                        } else {
                            (user, seen.version.unwrap_or_default(), true)
                        }
                    }
                };
                counts.count(Classification::Orphan);
                found.push(inspect::Orphan {
                    user,
                    observed_version,
                    member: spelling,
                    whole,
                });
            }
            if options.remove_orphans && !options.dry_run && !found.is_empty() {
                confirm(lock).await?;
                let replies = inspect::remove_orphans(store, board, &found).await?;
                counts.removed += tally(replies, "removed", counts);
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
    }
    Ok(())
}
