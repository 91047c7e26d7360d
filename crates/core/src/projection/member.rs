//! How a member of a board is spelt in Redis, so that Redis's order of `(score, member)` is the
//! database's order of `(score, col2, col3, tie, user_id)` (`model::Order`, `model::Key`).
//!
//! ```text
//! one column, tie == 0         member = user_id                                  (as before)
//! one column, tie != 0         member = "\x01" <tie> user_id
//!                              :v value = "<version>:<tie>"
//! 2 or 3 columns               member = "\x02" <n> <col2> [<col3>] <tie> user_id
//!                              :v value = "<version>:<n><col2>[<col3>]<tie>"
//! ```
//!
//! Each `<…>` is 16 lowercase hex digits: the value with its sign bit flipped, so fixed width,
//! byte order numeric order, and every i64 fits (no double is involved). `<n>` is the board's
//! number of columns, one digit. The other columns are in order-key form (`Columns::key`: the
//! board's direction), and the tie follows them even when it is 0 (ties by user id: then every
//! member of the board carries the same 16 digits there, and the user id decides). Members of
//! one board all share one shape, so equal scores sort by the other columns, then the tie,
//! then the user id, in byte order: the database's order. A user id cannot start with `\x01`
//! or `\x02` (control characters are refused), so a member says by itself how it is spelt, and
//! [`user_of`] needs no definition. The versions hash stays keyed by user id and keeps the
//! member's *key* (everything between the mark and the user id), so a member is found from its
//! user id in one HGET (what the reads' and the scripts' lookups do).
//!
//! Dense ranks count distinct tuples: on boards of one column the distinct scores (`:d`
//! members are the score in decimal), on boards with columns the member's *tuple*, its spelling
//! up to the tie (`"\x02" <n> <col2> [<col3>]`), at the member's score (`lua/members.lua`).
//!
//! The scripts spell the same in Lua (`lua/members.lua`: `member_of`, `parse_stored`,
//! `user_of`); the tests below, the reconciler's `tests/it/earliest.rs` (Lua's members against
//! these) and the api's `tests/it/board_columns.rs` hold the two spellings together.

use crate::model::Key;

/// The marker byte in front of a one-column board's tie key.
pub const KEY_MARK: char = '\u{1}';
/// The marker byte in front of a board-with-columns' key.
pub const COLUMNS_MARK: char = '\u{2}';
/// Bytes a tie key adds to a member (and, with its separator, to a `:v` value).
pub const KEY_BYTES: usize = 17;

/// 16 hex digits whose byte order is `value`'s numeric order.
fn hex(value: i64) -> String {
    format!("{:016x}", (value as u64) ^ (1 << 63))
}

/// The value 16 hex digits from [`hex`] spell; None for anything else.
fn unhex(digits: &str) -> Option<i64> {
    if digits.len() != 16
        || !digits
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    u64::from_str_radix(digits, 16)
        .ok()
        .map(|v| (v ^ (1 << 63)) as i64)
}

/// The 16-digit order-preserving spelling of a nonzero tie, as the scripts receive it
/// (`""` for tie 0).
pub fn tie_key(tie: i64) -> String {
    if tie == 0 { String::new() } else { hex(tie) }
}

/// The tie a 16-digit key spells; None for anything else.
pub fn tie_of_key(key: &str) -> Option<i64> {
    unhex(key).filter(|&t| t != 0)
}

/// What the scripts receive and the versions hash keeps of an entry's place after its score:
/// `""` (one column, ties by user id), a 16-digit tie key (one column, earliest), or the
/// column count, the other columns and the tie (boards with columns).
pub fn key_text(key: &Key) -> String {
    let columns = key.column_count();
    if columns == 1 {
        return tie_key(key.tie);
    }
    let mut text = String::with_capacity(1 + 16 * columns);
    text.push(char::from(b'0' + columns as u8));
    for &value in &key.rest[..columns - 1] {
        text.push_str(&hex(value));
    }
    text.push_str(&hex(key.tie));
    text
}

/// The key a [`key_text`] spells; None for anything else.
pub fn key_of_text(text: &str) -> Option<Key> {
    match text.len() {
        0 => Some(Key::tie(0)),
        16 => tie_of_key(text).map(Key::tie),
        _ => {
            let columns = match text.as_bytes().first() {
                Some(b'2') => 2,
                Some(b'3') => 3,
                _ => return None,
            };
            if text.len() != 1 + 16 * columns {
                return None;
            }
            let group = |i: usize| text.get(1 + 16 * i..17 + 16 * i).and_then(unhex);
            let mut rest = [0; 2];
            for (i, slot) in rest.iter_mut().enumerate().take(columns - 1) {
                *slot = group(i)?;
            }
            Some(Key {
                columns: columns as u8,
                rest,
                tie: group(columns - 1)?,
            })
        }
    }
}

/// The member that holds `user_id` at `key` (a tie alone, for a one-column board, converts).
pub fn member(user_id: &str, key: impl Into<Key>) -> String {
    let key = key.into();
    let text = key_text(&key);
    match text.len() {
        0 => user_id.to_owned(),
        16 => format!("{KEY_MARK}{text}{user_id}"),
        _ => format!("{COLUMNS_MARK}{text}{user_id}"),
    }
}

/// The user id and key a member spells; None for a member that starts with a mark but does
/// not carry a well-formed key (written by hand: the reconciler treats it as an orphan).
pub fn user_of(member: &str) -> Option<(&str, Key)> {
    let (text, user) = if let Some(rest) = member.strip_prefix(KEY_MARK) {
        (rest.get(..16)?, rest.get(16..)?)
    } else if let Some(rest) = member.strip_prefix(COLUMNS_MARK) {
        let columns = match rest.as_bytes().first() {
            Some(b'2') => 2,
            Some(b'3') => 3,
            _ => return None,
        };
        let len = 1 + 16 * columns;
        (rest.get(..len)?, rest.get(len..)?)
    } else {
        return Some((member, Key::tie(0)));
    };
    if user.is_empty() || text.is_empty() {
        return None;
    }
    Some((user, key_of_text(text)?))
}

/// The `:v` value of a member at `version` and `key`.
pub fn stored(version: i64, key: impl Into<Key>) -> String {
    let text = key_text(&key.into());
    if text.is_empty() {
        version.to_string()
    } else {
        format!("{version}:{text}")
    }
}

/// The version and key a `:v` value holds; None when it is not one [`stored`] writes.
pub fn parse_stored(value: &str) -> Option<(i64, Key)> {
    match value.split_once(':') {
        None => value.parse().ok().map(|v| (v, Key::tie(0))),
        Some((version, text)) if !text.is_empty() => {
            Some((version.parse().ok()?, key_of_text(text)?))
        }
        Some(_) => None,
    }
}

impl From<i64> for Key {
    /// A one-column board's key: its tie.
    fn from(tie: i64) -> Self {
        Key::tie(tie)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(rest: [i64; 2], columns: u8, tie: i64) -> Key {
        Key { columns, rest, tie }
    }

    #[test]
    fn keys_sort_like_their_ties() {
        let ties = [i64::MIN + 1, -9_000_000_000, -2, -1, 1, 2, 77, i64::MAX];
        for pair in ties.windows(2) {
            assert!(tie_key(pair[0]) < tie_key(pair[1]), "{pair:?}");
            assert!(member("b", pair[0]) < member("a", pair[1]), "{pair:?}");
        }
    }

    #[test]
    fn members_sort_like_their_tuples() {
        // Byte order of members of one board = order of (col2, col3, tie), then user id.
        let keys = [
            columns([-5, i64::MIN + 1], 3, 0),
            columns([-5, -1], 3, 0),
            columns([-5, -1], 3, 4),
            columns([-5, 0], 3, -9),
            columns([0, 0], 3, 0),
            columns([7, -3], 3, 0),
            columns([9_007_199_254_740_991, 0], 3, 0),
        ];
        for pair in keys.windows(2) {
            assert!(member("b", pair[0]) < member("a", pair[1]), "{pair:?}");
        }
        assert!(member("a", keys[1]) < member("b", keys[1]));
        let two = [columns([-1, 0], 2, 0), columns([0, 0], 2, -1)];
        assert!(member("z", two[0]) < member("a", two[1]));
    }

    #[test]
    fn members_and_values_round_trip() {
        for tie in [0, -1, 1, -123_456_789, i64::MAX] {
            let m = member("Zoë 42", tie);
            assert_eq!(user_of(&m), Some(("Zoë 42", Key::tie(tie))));
            assert_eq!(parse_stored(&stored(7, tie)), Some((7, Key::tie(tie))));
        }
        for key in [
            columns([3, 0], 2, 0),
            columns([-3, 0], 2, -77),
            columns([1, -2], 3, 0),
            columns([i64::MAX, i64::MIN], 3, 5),
        ] {
            let m = member("Zoë 42", key);
            assert!(m.starts_with(COLUMNS_MARK));
            assert_eq!(user_of(&m), Some(("Zoë 42", key)), "{key:?}");
            assert_eq!(parse_stored(&stored(7, key)), Some((7, key)), "{key:?}");
        }
        assert_eq!(member("u", 0), "u");
        assert_eq!(member("u", -1).len(), "u".len() + KEY_BYTES);
        assert_eq!(member("u", columns([1, 0], 3, 0)).len(), "u".len() + 2 + 48);
        assert_eq!(user_of("\u{1}short"), None);
        assert_eq!(user_of("\u{2}2short"), None);
        assert_eq!(user_of("\u{2}9"), None);
        // A key with nothing after it spells no user.
        assert_eq!(user_of(&member("", columns([1, 0], 2, 0))), None);
        assert_eq!(parse_stored("7:nothex"), None);
        assert_eq!(parse_stored("7:"), None);
        assert_eq!(parse_stored("x"), None);
        assert_eq!(parse_stored("7:4"), None);
    }
}
