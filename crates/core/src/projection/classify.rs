//! Intent (PostgreSQL) against observed (Redis), for one member.

use super::inspect::Observed;
use super::member;
use crate::db::source::RecheckedRow;
use crate::model::Key;
use serde::{Deserialize, Serialize};

use crate::telemetry::metrics::Label;

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
    /// Same version, different score, other columns, tie or metadata; or a stored value that
    /// is not a version (and key).
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
/// same version, another score or another key (the member is spelt with other columns or
/// another tie: its tuple, or its place among equal tuples, is wrong), other metadata (a
/// version is the member's whole absolute state: the projection writes score, key and metadata
/// together), or a stored value that is not one `member::stored` writes. Current: all equal.
///
/// Metadata is compared as the text the projection stores, byte for byte, as `repair.lua`
/// compares it: both come from PostgreSQL's rendering of the same `jsonb`.
pub fn classify(
    source_score: i64,
    source_key: Key,
    source_version: i64,
    source_metadata: Option<&str>,
    observed: &Observed,
) -> Classification {
    let stored = observed.version.as_deref().map(member::parse_stored);
    match (observed.score, stored) {
        (None, _) | (_, None) => Classification::Missing,
        (_, Some(None)) => Classification::Corrupt,
        (Some(score), Some(Some((version, key)))) => {
            if version < source_version {
                Classification::Stale
            } else if version > source_version {
                Classification::Ahead
            } else if score != source_score as f64
                || key != source_key
                || observed.metadata.as_deref() != source_metadata
            {
                Classification::Corrupt
            } else {
                Classification::Current
            }
        }
    }
}

/// The verdict on a member whose source row was re-read together with whether its version is
/// still pending in the outbox (`db::source::recheck`): as [`classify`], except that a member
/// behind its source (stale, or absent from both halves) whose version the projector has yet
/// to write is [`Classification::Lagging`], normal progress. The reconciler's pass judges its
/// suspects so; the console shows an operator the same verdict for one member.
pub fn verdict(source: &RecheckedRow, seen: &Observed) -> Classification {
    let row = &source.row;
    let class = classify(
        row.score,
        row.key,
        row.version,
        row.metadata.as_deref(),
        seen,
    );
    if source.pending && is_behind(class, seen) {
        Classification::Lagging
    } else {
        class
    }
}

/// Behind its source: an older version, or neither half of the member in Redis (what a
/// member not projected yet looks like; one half without the other is never written by the
/// projector, so that stays drift).
pub fn is_behind(class: Classification, seen: &Observed) -> bool {
    class == Classification::Stale
        || (class == Classification::Missing && seen.score.is_none() && seen.version.is_none())
}

/// The `class` label: the drift classes. `Current` and `Lagging` are not drift and are never
/// recorded under it (lagging members have metrics of their own).
impl Label for Classification {
    const ALL: &'static [Self] = &[
        Self::Missing,
        Self::Stale,
        Self::Ahead,
        Self::Corrupt,
        Self::Orphan,
    ];
    const KEY: &'static str = "class";
    fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Stale => "stale",
            Self::Ahead => "ahead",
            Self::Corrupt => "corrupt",
            Self::Current => "current",
            Self::Lagging => "lagging",
            Self::Orphan => "orphan",
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
            metadata: None,
        }
    }

    fn classify(score: i64, version: i64, observed: &Observed) -> Classification {
        super::classify(score, Key::tie(0), version, None, observed)
    }

    #[test]
    fn a_tie_is_compared_like_the_score() {
        use Classification::*;
        let at = |tie| Observed {
            score: Some(10.0),
            version: Some(member::stored(2, tie)),
            metadata: None,
        };
        assert_eq!(super::classify(10, Key::tie(-5), 2, None, &at(-5)), Current);
        assert_eq!(super::classify(10, Key::tie(-5), 2, None, &at(-6)), Corrupt);
        assert_eq!(super::classify(10, Key::tie(-5), 2, None, &at(0)), Corrupt);
        assert_eq!(super::classify(10, Key::tie(0), 2, None, &at(-5)), Corrupt);
        assert_eq!(super::classify(10, Key::tie(-5), 3, None, &at(-6)), Stale);
    }

    #[test]
    fn the_other_columns_are_compared_like_the_score() {
        use Classification::*;
        let key = |col2, tie| Key {
            columns: 2,
            rest: [col2, 0],
            tie,
        };
        let at = |k: Key| Observed {
            score: Some(10.0),
            version: Some(member::stored(2, k)),
            metadata: None,
        };
        assert_eq!(
            super::classify(10, key(-90, 0), 2, None, &at(key(-90, 0))),
            Current
        );
        // A tuple edited by hand: another time, same laps and version.
        assert_eq!(
            super::classify(10, key(-90, 0), 2, None, &at(key(-91, 0))),
            Corrupt
        );
        assert_eq!(
            super::classify(10, key(-90, 0), 2, None, &at(Key::tie(0))),
            Corrupt
        );
        assert_eq!(
            super::classify(10, key(-90, 0), 3, None, &at(key(-91, 0))),
            Stale
        );
    }

    #[test]
    fn metadata_is_part_of_a_version() {
        use Classification::*;
        let with = |metadata: Option<&str>| Observed {
            score: Some(10.0),
            version: Some(member::stored(2, 0)),
            metadata: metadata.map(str::to_owned),
        };
        let red = Some(r#"{"car": "red"}"#);
        assert_eq!(
            super::classify(10, Key::tie(0), 2, red, &with(red)),
            Current
        );
        assert_eq!(
            super::classify(10, Key::tie(0), 2, red, &with(Some(r#"{"car": "blue"}"#))),
            Corrupt
        );
        assert_eq!(
            super::classify(10, Key::tie(0), 2, red, &with(None)),
            Corrupt
        );
        assert_eq!(
            super::classify(10, Key::tie(0), 2, None, &with(red)),
            Corrupt
        );
        // A newer source version is the projector's to write, metadata and all.
        assert_eq!(super::classify(10, Key::tie(0), 3, None, &with(red)), Stale);
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
