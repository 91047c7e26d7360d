//! Ranks, percentiles and page cursors, computed the same way for both read paths: each path
//! finds a page's rows and where its first row stands (its [`Bases`]), and the functions here
//! turn that into the entries the api answers. Only the counting differs between the paths
//! (`db/reads.rs` in SQL, `projection/read.rs` in one script), never the arithmetic.

use serde::{Deserialize, Serialize};

use crate::model::{Columns, Key, RankedEntry};

/// How equal scores share ranks, chosen at read time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum RankMode {
    /// Every entry its own position: 1, 2, 3, 4 (equal scores ordered by the board's tie break).
    #[default]
    Ordinal,
    /// Equal scores share a rank and the next score takes the next rank: 1, 2, 2, 3.
    Dense,
    /// Equal scores share a rank and the next score skips the shared places: 1, 2, 2, 4.
    Competition,
}

impl RankMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ordinal => "ordinal",
            Self::Dense => "dense",
            Self::Competition => "competition",
        }
    }
}

/// Where the first row of a page stands on its board. "Better" is by the whole tuple: the
/// score, then on a board with columns its other columns (ties aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bases {
    /// Its position, 1-based (entries ahead of it + 1).
    pub ordinal: u64,
    /// 1 + entries with a strictly better tuple.
    pub competition: u64,
    /// 1 + distinct tuples strictly better; None when the read did not count them (dense
    /// ranks were not asked for).
    pub dense: Option<u64>,
}

/// A row of a page as a read path found it, in board order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub user_id: String,
    pub score: i64,
    /// The row's other columns and tie (`model::Key`): whether it shares a rank with the row
    /// before it, its values, and the next page's cursor.
    pub key: Key,
    /// The entry's metadata, a JSON object as text, when it has one.
    pub metadata: Option<String>,
}

/// The share of the board, in percent, whose score this entry's equals or beats: the leader
/// has 100, tied entries have the same, the last distinct score `100 × (ties at it) / total`.
pub fn percentile(total: u64, competition: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let equal_or_worse = total.saturating_sub(competition) + 1;
    100.0 * equal_or_worse as f64 / total as f64
}

fn metadata(text: Option<String>) -> Option<serde_json::Value> {
    // Stored by the command path as a serialized JSON object; a value that does not parse
    // (edited by hand) is left out rather than failing the whole read.
    text.and_then(|t| serde_json::from_str(&t).ok())
}

/// One entry from a member's own standing (the `users` reads): `key` is the member's, on a
/// board of `columns`.
#[allow(clippy::too_many_arguments)]
pub fn entry(
    mode: RankMode,
    total: u64,
    bases: Bases,
    columns: Columns,
    user_id: String,
    score: i64,
    key: Key,
    meta: Option<String>,
) -> RankedEntry {
    let rank = match mode {
        RankMode::Ordinal => bases.ordinal,
        RankMode::Competition => bases.competition,
        // Not counted only when not asked for: then this is never shown.
        RankMode::Dense => bases.dense.unwrap_or(0),
    };
    RankedEntry {
        rank,
        user_id,
        score,
        scores: columns.several().then(|| columns.values(score, key.rest)),
        percentile: percentile(total, bases.competition),
        metadata: metadata(meta),
    }
}

/// The entries of a page whose first row stands at `bases`, rows in board order, on a board of
/// `columns`. Within the page, a row with the same tuple as the one before (score and other
/// columns) shares its competition and dense rank; a row with another tuple has competition
/// rank = its position (every entry ahead of it has a strictly better tuple) and the next dense
/// rank.
pub fn rank_page(
    mode: RankMode,
    total: u64,
    bases: Bases,
    columns: Columns,
    rows: Vec<Row>,
) -> Vec<RankedEntry> {
    let mut out = Vec::with_capacity(rows.len());
    let mut current = bases;
    let mut previous: Option<(i64, Key)> = None;
    for (i, row) in rows.into_iter().enumerate() {
        let ordinal = bases.ordinal + i as u64;
        if previous.is_some_and(|(score, key)| score != row.score || !key.same_tuple(row.key)) {
            current.competition = ordinal;
            current.dense = current.dense.map(|d| d + 1);
        }
        current.ordinal = ordinal;
        previous = Some((row.score, row.key));
        out.push(entry(
            mode,
            total,
            current,
            columns,
            row.user_id,
            row.score,
            row.key,
            row.metadata,
        ));
    }
    out
}

/// A ranked page and what the answer says about the board.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub entries: Vec<RankedEntry>,
    /// Entries on the board.
    pub total: u64,
    /// The cursor of the page's last entry when the page is full (there may be more).
    pub next: Option<Cursor>,
}

impl Page {
    /// The page of `rows` (board order, on a board of `columns`) whose first row stands at
    /// `bases`; `limit` is the page size asked for when a full page gets a `next` cursor
    /// (None: pages without one).
    pub fn new(
        mode: RankMode,
        total: u64,
        bases: Bases,
        columns: Columns,
        rows: Vec<Row>,
        limit: Option<u64>,
    ) -> Self {
        let next = match (rows.last(), limit) {
            (Some(last), Some(limit)) if rows.len() as u64 >= limit => Some(Cursor::of(last)),
            _ => None,
        };
        Self {
            entries: rank_page(mode, total, bases, columns, rows),
            total,
            next,
        }
    }
}

/// Members looked up by user id, in board order, and the board's total.
#[derive(Debug, Clone, PartialEq)]
pub struct Standings {
    pub members: Vec<crate::model::MemberStanding>,
    pub total: u64,
}

/// Where a cursor page starts: just after the entry `(score, key, user_id)` in the board's
/// order (that entry need not be on the board any more). Sent to clients as an opaque string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    pub score: i64,
    /// The entry's other columns (order-key form) and tie.
    pub key: Key,
    pub user_id: String,
}

/// Longest cursor text accepted: a user id's 128 bytes and four 20-digit numbers, in hex.
pub const MAX_CURSOR_CHARS: usize = 2 * (128 + 4 * 21);

impl Cursor {
    pub fn of(row: &Row) -> Self {
        Self {
            score: row.score,
            key: row.key,
            user_id: row.user_id.clone(),
        }
    }

    /// `<score>,<tie>,<user id>` (on a board with columns `<score>:<col2>[:<col3>],<tie>,<user
    /// id>`, the other columns in order-key form) in lowercase hex: URL-safe as it is, and
    /// opaque enough that clients pass it back rather than build one. A one-column board's
    /// cursors are spelt as they were before columns existed, so cursors given then still work.
    pub fn encode(&self) -> String {
        let mut head = self.score.to_string();
        for value in &self.key.rest[..self.key.column_count() - 1] {
            head.push(':');
            head.push_str(&value.to_string());
        }
        let plain = format!("{head},{},{}", self.key.tie, self.user_id);
        plain.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// The cursor a text from [`Cursor::encode`] names; None for anything else. The user id is
    /// only split off here; the caller validates it like any other.
    pub fn decode(text: &str) -> Option<Self> {
        if text.is_empty() || text.len() > MAX_CURSOR_CHARS || !text.len().is_multiple_of(2) {
            return None;
        }
        let bytes = (0..text.len())
            .step_by(2)
            .map(|i| {
                text.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()?;
        let plain = String::from_utf8(bytes).ok()?;
        let mut parts = plain.splitn(3, ',');
        let mut head = parts.next()?.split(':');
        let score = head.next()?.parse().ok()?;
        let mut key = Key::tie(parts.next()?.parse().ok()?);
        for (i, value) in head.enumerate() {
            *key.rest.get_mut(i)? = value.parse().ok()?;
            key.columns += 1;
        }
        let user_id = parts.next()?.to_owned();
        Some(Self {
            score,
            key,
            user_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(scores: &[i64]) -> Vec<Row> {
        scores
            .iter()
            .enumerate()
            .map(|(i, &score)| Row {
                user_id: format!("u{i}"),
                score,
                key: Key::tie(0),
                metadata: None,
            })
            .collect()
    }

    fn ranks(mode: RankMode, bases: Bases, scores: &[i64]) -> Vec<u64> {
        rank_page(mode, 100, bases, Columns::ONE, rows(scores))
            .iter()
            .map(|e| e.rank)
            .collect()
    }

    #[test]
    fn the_three_modes_from_the_top() {
        let top = Bases {
            ordinal: 1,
            competition: 1,
            dense: Some(1),
        };
        let scores = [9, 7, 7, 5, 5, 5, 1];
        assert_eq!(
            ranks(RankMode::Ordinal, top, &scores),
            [1, 2, 3, 4, 5, 6, 7]
        );
        assert_eq!(
            ranks(RankMode::Competition, top, &scores),
            [1, 2, 2, 4, 4, 4, 7]
        );
        assert_eq!(ranks(RankMode::Dense, top, &scores), [1, 2, 2, 3, 3, 3, 4]);
    }

    #[test]
    fn a_page_starting_inside_a_tie() {
        // Positions 11.. of a board whose 8th to 12th entries share score 5 (7 entries with a
        // better score, 4 distinct better scores).
        let bases = Bases {
            ordinal: 11,
            competition: 8,
            dense: Some(5),
        };
        let scores = [5, 5, 4, 4];
        assert_eq!(ranks(RankMode::Competition, bases, &scores), [8, 8, 13, 13]);
        assert_eq!(ranks(RankMode::Dense, bases, &scores), [5, 5, 6, 6]);
        assert_eq!(ranks(RankMode::Ordinal, bases, &scores), [11, 12, 13, 14]);
    }

    #[test]
    fn on_a_board_with_columns_the_whole_tuple_shares_a_rank() {
        let columns = Columns::of(&[crate::model::Sort::Descending; 2]).expect("two");
        let row = |score, col2, user: &str| Row {
            user_id: user.into(),
            score,
            key: Key {
                columns: 2,
                rest: [col2, 0],
                tie: 0,
            },
            metadata: None,
        };
        let top = Bases {
            ordinal: 1,
            competition: 1,
            dense: Some(1),
        };
        let rows = vec![
            row(9, 5, "a"),
            row(9, 5, "b"),
            row(9, 4, "c"),
            row(8, 4, "d"),
        ];
        let ranks = |mode| -> Vec<u64> {
            rank_page(mode, 4, top, columns, rows.clone())
                .iter()
                .map(|e| e.rank)
                .collect()
        };
        assert_eq!(ranks(RankMode::Competition), [1, 1, 3, 4]);
        assert_eq!(ranks(RankMode::Dense), [1, 1, 2, 3]);
        let entries = rank_page(RankMode::Ordinal, 4, top, columns, rows.clone());
        assert_eq!(entries[2].scores, Some(vec![9, 4]));
        assert_eq!(
            rank_page(RankMode::Ordinal, 4, top, Columns::ONE, rows)[0].scores,
            None
        );
    }

    #[test]
    fn percentiles() {
        assert_eq!(percentile(4, 1), 100.0);
        assert_eq!(percentile(4, 4), 25.0);
        // Two tied for second of four: both beat or equal three quarters of the board.
        assert_eq!(percentile(4, 2), 75.0);
        assert_eq!(percentile(0, 1), 0.0);
    }

    #[test]
    fn cursors_round_trip_and_refuse_junk() {
        for c in [
            Cursor {
                score: -9_007_199_254_740_991,
                key: Key::tie(i64::MIN + 1),
                user_id: "Zoë,42".into(),
            },
            Cursor {
                score: 0,
                key: Key::tie(0),
                user_id: "a".repeat(128),
            },
            Cursor {
                score: 7,
                key: Key {
                    columns: 3,
                    rest: [-9_007_199_254_740_991, 12],
                    tie: -4,
                },
                user_id: "Zoë:,42".into(),
            },
            Cursor {
                score: -7,
                key: Key {
                    columns: 2,
                    rest: [5, 0],
                    tie: 0,
                },
                user_id: "a".repeat(128),
            },
        ] {
            let text = c.encode();
            assert!(text.len() <= MAX_CURSOR_CHARS);
            assert!(text.bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(Cursor::decode(&text), Some(c));
        }
        // A cursor of a one-column board reads as it did before columns existed.
        let before = "31302c2d352c7a6f65"; // "10,-5,zoe"
        assert_eq!(
            Cursor::decode(before),
            Some(Cursor {
                score: 10,
                key: Key::tie(-5),
                user_id: "zoe".into()
            })
        );
        // Four values before the tie is one column too many.
        let four: String = "1:2:3:4,0,u".bytes().map(|b| format!("{b:02x}")).collect();
        for junk in ["", "zz", "123", "31", "312c", &"31".repeat(400), &four] {
            assert_eq!(Cursor::decode(junk), None, "{junk}");
        }
    }
}
