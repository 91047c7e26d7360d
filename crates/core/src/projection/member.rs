//! How a member of a board is spelt in Redis, so that Redis's order of `(score, member)` is the
//! database's order of `(score, tie, user_id)` (`model::Order`).
//!
//! ```text
//! tie == 0 (ties by user id)   member = user_id                              (as before)
//! tie != 0 (earliest boards)   member = "\x01" <16 hex digits of tie ^ 2^63> user_id
//!                              :v value = "<version>:<16 hex digits>"
//! ```
//!
//! The 16 digits are the tie with its sign bit flipped, in lowercase hex: fixed width, so byte
//! order is numeric order, and every tie in ±2^63 fits (no double is involved). Members of one
//! `earliest` board all start with the key, so equal scores sort by tie alone (ties are
//! unique); the user id after it only makes the member unique and readable. A user id cannot
//! start with `\x01` (control characters are refused), so a member says by itself whether it
//! carries a key, and [`user_of`] needs no definition. The versions hash stays keyed by user
//! id and also keeps the key, so a member is found from its user id in one HGET (what the reads'
//! and the scripts' lookups do).
//!
//! The scripts spell the same in Lua (`lua/prelude.lua`: `member_of`, `parse_stored`); the
//! tests below and `core/tests/member_order.rs` hold the two spellings together.

/// The marker byte in front of a tie key.
pub const KEY_MARK: char = '\u{1}';
/// Bytes a tie key adds to a member (and, with its separator, to a `:v` value).
pub const KEY_BYTES: usize = 17;

/// The 16-digit order-preserving spelling of a nonzero tie, as the scripts receive it
/// (`""` for tie 0).
pub fn tie_key(tie: i64) -> String {
    if tie == 0 {
        String::new()
    } else {
        format!("{:016x}", (tie as u64) ^ (1 << 63))
    }
}

/// The tie a 16-digit key spells; None for anything else.
pub fn tie_of_key(key: &str) -> Option<i64> {
    if key.len() != 16
        || !key
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    u64::from_str_radix(key, 16)
        .ok()
        .map(|v| (v ^ (1 << 63)) as i64)
        .filter(|&t| t != 0)
}

/// The member that holds `user_id` at `tie`.
pub fn member(user_id: &str, tie: i64) -> String {
    if tie == 0 {
        user_id.to_owned()
    } else {
        format!("{KEY_MARK}{}{user_id}", tie_key(tie))
    }
}

/// The user id and tie a member spells; None for a member that starts with the mark but does
/// not carry a well-formed key (written by hand: the reconciler treats it as an orphan).
pub fn user_of(member: &str) -> Option<(&str, i64)> {
    match member.strip_prefix(KEY_MARK) {
        None => Some((member, 0)),
        Some(rest) => {
            let key = rest.get(..16)?;
            let user = rest.get(16..).filter(|u| !u.is_empty())?;
            Some((user, tie_of_key(key)?))
        }
    }
}

/// The `:v` value of a member at `version` and `tie`.
pub fn stored(version: i64, tie: i64) -> String {
    if tie == 0 {
        version.to_string()
    } else {
        format!("{version}:{}", tie_key(tie))
    }
}

/// The version and tie a `:v` value holds; None when it is not one [`stored`] writes.
pub fn parse_stored(value: &str) -> Option<(i64, i64)> {
    match value.split_once(':') {
        None => value.parse().ok().map(|v| (v, 0)),
        Some((version, key)) => Some((version.parse().ok()?, tie_of_key(key)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_like_their_ties() {
        let ties = [i64::MIN + 1, -9_000_000_000, -2, -1, 1, 2, 77, i64::MAX];
        for pair in ties.windows(2) {
            assert!(tie_key(pair[0]) < tie_key(pair[1]), "{pair:?}");
            assert!(member("b", pair[0]) < member("a", pair[1]), "{pair:?}");
        }
    }

    #[test]
    fn members_and_values_round_trip() {
        for tie in [0, -1, 1, -123_456_789, i64::MAX] {
            let m = member("Zoë 42", tie);
            assert_eq!(user_of(&m), Some(("Zoë 42", tie)));
            assert_eq!(parse_stored(&stored(7, tie)), Some((7, tie)));
        }
        assert_eq!(member("u", 0), "u");
        assert_eq!(member("u", -1).len(), "u".len() + KEY_BYTES);
        assert_eq!(user_of("\u{1}short"), None);
        assert_eq!(parse_stored("7:nothex"), None);
        assert_eq!(parse_stored("x"), None);
    }
}
