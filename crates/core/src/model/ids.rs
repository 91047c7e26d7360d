//! The ids a command and a read name: boards (and their periods), users, events. Each is built
//! only from validated input, since they reach SQL statements and Redis keys.

use std::fmt;

use serde::Serialize;
use uuid::Uuid;

use super::error::ValidationError;

pub const MAX_BOARD_ID_LEN: usize = crate::ids::MAX_IDENTIFIER_LEN;
pub const MAX_USER_ID_BYTES: usize = 128;

/// A leaderboard's id. It appears inside Redis keys, so its alphabet is narrow: no braces
/// (they would change the Cluster hash tag), no separators, no spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct BoardId(String);

/// Between a board's id and one of its periods' (`weekly~20261130T000000Z`): outside the
/// identifier alphabet, so no board a client names can look like a period of another.
pub const PERIOD_SEPARATOR: char = '~';

/// Whether `raw` is a period id: a period's start in UTC to the second, `YYYYMMDDTHHMMSSZ`
/// (`lb_period_id`, migration V7). It says nothing of whether such a period exists.
pub fn is_period_id(raw: &str) -> bool {
    let b = raw.as_bytes();
    b.len() == 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
}

/// The most cohorts one run of a competition holds: a cohort's key is 6 digits, so that the
/// text order of cohort boards (every store's) is their numeric order.
pub const MAX_COHORT: u32 = 999_999;

/// A cohort's key in its board's id: 6 digits, zero-padded.
pub fn cohort_key(cohort: u32) -> String {
    format!("{cohort:06}")
}

/// Whether `raw` is what follows a board id and its separator in a stored board: a period id,
/// or a period id, the separator and a cohort's 6 digits (not all zero).
pub fn is_period_key(raw: &str) -> bool {
    match raw.split_once(PERIOD_SEPARATOR) {
        None => is_period_id(raw),
        Some((period, cohort)) => {
            is_period_id(period)
                && cohort.len() == 6
                && cohort.bytes().all(|b| b.is_ascii_digit())
                && cohort != "000000"
        }
    }
}

impl BoardId {
    /// A board as a client names it: an identifier, never one of its periods (a command, a
    /// definition and a read name the board; a read picks the period with `period=`).
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        if crate::ids::is_identifier(raw) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(ValidationError::BoardId)
        }
    }

    /// A board as the stores hold it: a board, one period of a board that resets
    /// (`<board>~<period id>`), or one cohort of a competition's run (`<board>~<period
    /// id>~<cohort>`, migration V18): what the outbox, the reconciler's board list, rebuild
    /// requests and the operator's `--board` name.
    pub fn parse_stored(raw: &str) -> Result<Self, ValidationError> {
        match raw.split_once(PERIOD_SEPARATOR) {
            None => Self::parse(raw),
            Some((base, period)) if crate::ids::is_identifier(base) && is_period_key(period) => {
                Ok(Self(raw.to_owned()))
            }
            Some(_) => Err(ValidationError::BoardId),
        }
    }

    /// One cohort of this board's period `period` (a competition's run).
    pub fn in_cohort(&self, period: &str, cohort: u32) -> Result<Self, ValidationError> {
        if !is_period_id(period) || !(1..=MAX_COHORT).contains(&cohort) {
            return Err(ValidationError::BoardId);
        }
        Ok(Self(format!(
            "{}{PERIOD_SEPARATOR}{period}{PERIOD_SEPARATOR}{}",
            self.base().as_str(),
            cohort_key(cohort)
        )))
    }

    /// The cohort, when this is one cohort of a competition's run.
    pub fn cohort(&self) -> Option<u32> {
        let (_, key) = self.period()?.split_once(PERIOD_SEPARATOR)?;
        key.parse().ok()
    }

    /// One period of this board.
    pub fn in_period(&self, period: &str) -> Result<Self, ValidationError> {
        Self::parse_stored(&format!(
            "{}{PERIOD_SEPARATOR}{period}",
            self.base().as_str()
        ))
    }

    /// The board this one is a period of; itself when it is no period.
    pub fn base(&self) -> BoardId {
        match self.0.split_once(PERIOD_SEPARATOR) {
            Some((base, _)) => Self(base.to_owned()),
            None => self.clone(),
        }
    }

    /// The period id, when this is a period of a board.
    pub fn period(&self) -> Option<&str> {
        self.0.split_once(PERIOD_SEPARATOR).map(|(_, p)| p)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BoardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A player's id, chosen by the game. Any UTF-8 without control characters; the byte limit
/// keeps keys, index entries and log lines bounded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct UserId(String);

impl UserId {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let ok = (1..=MAX_USER_ID_BYTES).contains(&raw.len()) && !raw.chars().any(char::is_control);
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(ValidationError::UserId)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The caller's stable id for one score command: the idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct EventId(Uuid);

impl EventId {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        match Uuid::try_parse(raw) {
            // The nil UUID is what an uninitialised client field looks like: refusing it keeps
            // two unrelated commands from colliding on it.
            Ok(id) if !id.is_nil() => Ok(Self(id)),
            _ => Err(ValidationError::EventId),
        }
    }

    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl From<Uuid> for EventId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_ids() {
        assert!(BoardId::parse("season-1.eu_west").is_ok());
        assert!(BoardId::parse(&"a".repeat(64)).is_ok());
        for bad in ["", "a b", "a{b}", "a:b", "é", &"a".repeat(65)] {
            assert_eq!(
                BoardId::parse(bad),
                Err(ValidationError::BoardId),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn periods_of_a_board() {
        let weekly = BoardId::parse("weekly").expect("board");
        let period = weekly.in_period("20261130T000000Z").expect("period");
        assert_eq!(period.as_str(), "weekly~20261130T000000Z");
        assert_eq!(
            (period.base(), period.period()),
            (weekly.clone(), Some("20261130T000000Z"))
        );
        assert_eq!(weekly.period(), None);
        // A period of a period is the base board's period.
        assert_eq!(
            period.in_period("20261207T000000Z").expect("period").base(),
            weekly
        );
        // Clients name boards, never periods.
        assert_eq!(
            BoardId::parse(period.as_str()),
            Err(ValidationError::BoardId)
        );
        assert_eq!(BoardId::parse_stored(period.as_str()), Ok(period));
        let cohort = weekly.in_cohort("20261130T000000Z", 17).expect("cohort");
        assert_eq!(cohort.as_str(), "weekly~20261130T000000Z~000017");
        assert_eq!(
            (cohort.base(), cohort.period(), cohort.cohort()),
            (weekly.clone(), Some("20261130T000000Z~000017"), Some(17))
        );
        assert_eq!(BoardId::parse_stored(cohort.as_str()), Ok(cohort));
        assert_eq!(
            weekly
                .in_period("20261130T000000Z")
                .ok()
                .and_then(|p| p.cohort()),
            None
        );
        assert!(weekly.in_cohort("20261130T000000Z", 0).is_err());
        assert!(weekly.in_cohort("20261130T000000Z", 1_000_000).is_err());
        for bad in [
            "weekly~20261130T000000Z~",
            "weekly~20261130T000000Z~17",
            "weekly~20261130T000000Z~000000",
            "weekly~20261130T000000Z~0000170",
            "weekly~",
            "~20261130T000000Z",
            "weekly~2026-11-30",
            "weekly~20261130T000000",
            "weekly~20261130T000000Z~20261130T000000Z",
            "a b~20261130T000000Z",
        ] {
            assert_eq!(
                BoardId::parse_stored(bad),
                Err(ValidationError::BoardId),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn user_ids() {
        assert!(UserId::parse("Zoë 42").is_ok());
        assert!(UserId::parse(&"é".repeat(64)).is_ok()); // 128 bytes
        for bad in ["", "a\0b", "a\nb", "\u{7f}", &"é".repeat(65)] {
            assert_eq!(UserId::parse(bad), Err(ValidationError::UserId), "{bad:?}");
        }
    }

    #[test]
    fn event_ids() {
        let id = EventId::parse("6F9619FF-8B86-D011-B42D-00C04FC964FF").expect("valid uuid");
        assert_eq!(id.to_string(), "6f9619ff-8b86-d011-b42d-00c04fc964ff");
        assert!(EventId::parse("00000000-0000-0000-0000-000000000000").is_err());
        assert!(EventId::parse("not-a-uuid").is_err());
    }
}
