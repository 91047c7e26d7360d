//! Intent (PostgreSQL) against observed (Redis), for one member.

use ledgerboard_core::projection::inspect::Observed;
use ledgerboard_core::projection::member;
use serde::{Deserialize, Serialize};

/// How one member's projection compares with its source row (the reconciler's verdict).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Classification {
    /// In PostgreSQL; absent from Redis (its score, its version, or both).
    Missing,
    /// Redis holds an older version than PostgreSQL.
    Stale,
    /// Redis holds a newer version than PostgreSQL: a wrong database or a rolled-back source.
    Ahead,
    /// Same version, different score or tie; or a stored value that is not a version (and tie
    /// key).
    Corrupt,
    Current,
    /// Redis holds an older version than PostgreSQL (or none), and the outbox row of the
    /// source version is still pending: the projector has yet to write it. Normal progress,
    /// not drift, and not repaired.
    Lagging,
    /// In Redis with no source row.
    Orphan,
}

/// Missing: either half of the member is absent. Stale / ahead: the versions differ. Corrupt:
/// same version, another score or another tie (the member is spelt with the wrong tie key:
/// its place among equal scores is wrong), or a stored value that is not one
/// `member::stored` writes. Current: all equal.
pub fn classify(
    source_score: i64,
    source_tie: i64,
    source_version: i64,
    observed: &Observed,
) -> Classification {
    let stored = observed.version.as_deref().map(member::parse_stored);
    match (observed.score, stored) {
        (None, _) | (_, None) => Classification::Missing,
        (_, Some(None)) => Classification::Corrupt,
        (Some(score), Some(Some((version, tie)))) => {
            if version < source_version {
                Classification::Stale
            } else if version > source_version {
                Classification::Ahead
            } else if score != source_score as f64 || tie != source_tie {
                Classification::Corrupt
            } else {
                Classification::Current
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(score: Option<f64>, version: Option<Result<i64, ()>>) -> Observed {
        Observed {
            score,
            version: version.map(|v| v.map_or_else(|()| "x".to_owned(), |v| v.to_string())),
        }
    }

    fn classify(score: i64, version: i64, observed: &Observed) -> Classification {
        super::classify(score, 0, version, observed)
    }

    #[test]
    fn a_tie_is_compared_like_the_score() {
        use Classification::*;
        let at = |tie| Observed {
            score: Some(10.0),
            version: Some(member::stored(2, tie)),
        };
        assert_eq!(super::classify(10, -5, 2, &at(-5)), Current);
        assert_eq!(super::classify(10, -5, 2, &at(-6)), Corrupt);
        assert_eq!(super::classify(10, -5, 2, &at(0)), Corrupt);
        assert_eq!(super::classify(10, 0, 2, &at(-5)), Corrupt);
        assert_eq!(super::classify(10, -5, 3, &at(-6)), Stale);
    }

    #[test]
    fn every_class() {
        use Classification::*;
        assert_eq!(classify(10, 2, &seen(None, None)), Missing);
        assert_eq!(classify(10, 2, &seen(Some(10.0), None)), Missing);
        assert_eq!(classify(10, 2, &seen(None, Some(Ok(2)))), Missing);
        assert_eq!(classify(10, 2, &seen(Some(7.0), Some(Ok(1)))), Stale);
        assert_eq!(classify(10, 2, &seen(Some(10.0), Some(Ok(3)))), Ahead);
        assert_eq!(classify(10, 2, &seen(Some(999.0), Some(Ok(2)))), Corrupt);
        assert_eq!(classify(10, 2, &seen(Some(10.0), Some(Err(())))), Corrupt);
        assert_eq!(classify(10, 2, &seen(Some(10.0), Some(Ok(2)))), Current);
        let max = (1_i64 << 53) - 1;
        assert_eq!(
            classify(max, 1, &seen(Some(max as f64), Some(Ok(1)))),
            Current
        );
        assert_eq!(
            classify(max - 1, 1, &seen(Some(max as f64), Some(Ok(1)))),
            Corrupt
        );
    }
}
