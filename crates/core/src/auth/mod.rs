//! Who may call the api: bearer tokens, configured as SHA-256 digests (the tokens themselves
//! are never in the settings, the logs or an error), each with scopes.
//!
//! `auth.tokens` holds entries `name=<sha256 hex>@scope[,scope…]`, separated by `;`:
//!
//! ```text
//! game-eu=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08@write:*;ops=…@admin
//! ```
//!
//! Scopes: `write:*` (score commands on every board), `write:<board>` (on that board),
//! `read` (reads, when `auth.reads = token`), `moderate` (moderation commands: removals, bans,
//! erasures; and reads), `events` (the event feed, `GET /v1/events`: every board's scores,
//! closes, moderation and review decisions, with user ids; and reads), `admin` (everything). A
//! release before `moderate` (or `events`) existed refuses a table that names it: remove such
//! entries before rolling back to one. `lbctl token new` makes a
//! token and its entry; `lbctl token hash` hashes one you have.
//!
//! Player tokens (JWTs a game's backend mints for one player, verified with the keys of
//! `auth.player_keys`) are in [`player`].

pub mod player;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::model::BoardId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    WriteAll,
    WriteBoard(BoardId),
    Read,
    Moderate,
    /// The event feed: what happens on every board, user ids and moderation reasons included,
    /// so neither `read` nor `moderate` grants it.
    Events,
    Admin,
}

/// One configured token: its name (for logs and rate limits), digest and scopes.
#[derive(Clone)]
pub struct TokenEntry {
    pub name: String,
    digest: [u8; 32],
    scopes: Vec<Scope>,
}

// Not derived: the digest says who may write, and `Debug` output reaches logs and assertion
// messages.
impl std::fmt::Debug for TokenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEntry")
            .field("name", &self.name)
            .field("digest", &"***")
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl TokenEntry {
    pub fn may_write(&self, board: &BoardId) -> bool {
        self.scopes.iter().any(|s| match s {
            Scope::Admin | Scope::WriteAll => true,
            Scope::WriteBoard(b) => b == board,
            Scope::Read | Scope::Moderate | Scope::Events => false,
        })
    }

    /// Declaring and changing board definitions needs `admin`.
    pub fn may_administer(&self) -> bool {
        self.scopes.contains(&Scope::Admin)
    }

    /// Moderation commands (removal, ban, unban, erasure) need `moderate` or `admin`: a
    /// support team's token need not be able to change board definitions.
    pub fn may_moderate(&self) -> bool {
        self.scopes
            .iter()
            .any(|s| matches!(s, Scope::Moderate | Scope::Admin))
    }

    /// The event feed (`GET /v1/events`) needs `events` or `admin`.
    pub fn may_read_events(&self) -> bool {
        self.scopes
            .iter()
            .any(|s| matches!(s, Scope::Events | Scope::Admin))
    }

    /// Reading needs `read`; a token that may write or administer may read too.
    pub fn may_read(&self) -> bool {
        !self.scopes.is_empty()
    }
}

/// The configured tokens.
#[derive(Debug, Clone, Default)]
pub struct TokenTable {
    entries: Vec<TokenEntry>,
}

/// The SHA-256 digest of a token, in lowercase hex, as `auth.tokens` holds it.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The console's CSRF token for a session whose cookie holds `token`: SHA-256 over a purpose
/// label and the token, in hex. Only a holder of the token can compute it (the cookie is
/// HttpOnly, so no script and no other site can read it), every api replica computes the same
/// one (no server-side session to share), and it reveals nothing of the token.
pub fn csrf_token(token: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"ledgerboard console csrf\0");
    h.update(token.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a presented secret equals the expected one, in time independent of where they
/// differ.
pub fn same_secret(presented: &str, expected: &str) -> bool {
    presented.len() == expected.len() && bool::from(presented.as_bytes().ct_eq(expected.as_bytes()))
}

/// The entries of a setting of `name=rest` entries separated by `;` (`auth.tokens`,
/// `auth.player_keys`): each one's position (from 1), its name (an identifier, used once; the
/// setting calls it `what`) and the rest, trimmed. Errors name an entry by its position and
/// name, never by the rest (a digest, a key).
fn named_entries<'a>(
    spec: &'a str,
    what: &str,
    shape: &str,
) -> Result<Vec<(usize, &'a str, &'a str)>, String> {
    let mut out: Vec<(usize, &str, &str)> = Vec::new();
    for (i, raw) in spec
        .split(';')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .enumerate()
    {
        let n = i + 1;
        let (name, rest) = raw
            .split_once('=')
            .ok_or_else(|| format!("entry {n}: expected {shape}"))?;
        let name = name.trim();
        if !crate::ids::is_identifier(name) {
            return Err(format!(
                "entry {n}: the {what} must be 1 to 64 characters of A-Z a-z 0-9 - _ ."
            ));
        }
        if out.iter().any(|(_, seen, _)| *seen == name) {
            return Err(format!("entry {n} ({name}): the {what} is used twice"));
        }
        out.push((n, name, rest.trim()));
    }
    Ok(out)
}

impl TokenTable {
    /// Parses `auth.tokens`. Errors name the entry by its position and name, never by digest.
    pub fn parse(spec: &str) -> Result<TokenTable, String> {
        let mut entries: Vec<TokenEntry> = Vec::new();
        for (n, name, rest) in named_entries(spec, "name", "name=<sha256 hex>@scopes")? {
            let (hex, scopes) = rest
                .split_once('@')
                .ok_or_else(|| format!("entry {n} ({name}): expected <sha256 hex>@scopes"))?;
            let digest = parse_digest(hex.trim()).ok_or_else(|| {
                format!("entry {n} ({name}): the digest must be 64 hex digits (lbctl token hash)")
            })?;
            let scopes = scopes
                .split(',')
                .map(str::trim)
                .map(|s| parse_scope(s).ok_or_else(|| format!("entry {n} ({name}): unknown scope {s:?} (write:*, write:<board>, read, moderate, events, admin)")))
                .collect::<Result<Vec<_>, _>>()?;
            entries.push(TokenEntry {
                name: name.to_owned(),
                digest,
                scopes,
            });
        }
        Ok(TokenTable { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry whose digest matches `presented`. Every entry is compared, in constant time,
    /// so the answer's timing says nothing about which digest came close.
    pub fn authenticate(&self, presented: &str) -> Option<&TokenEntry> {
        let digest = Sha256::digest(presented.as_bytes());
        let mut found = None;
        for entry in &self.entries {
            if bool::from(entry.digest.ct_eq(digest.as_slice())) {
                found = Some(entry);
            }
        }
        found
    }
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn parse_scope(s: &str) -> Option<Scope> {
    match s {
        "write:*" => Some(Scope::WriteAll),
        "read" => Some(Scope::Read),
        "moderate" => Some(Scope::Moderate),
        "events" => Some(Scope::Events),
        "admin" => Some(Scope::Admin),
        _ => s
            .strip_prefix("write:")
            .and_then(|b| BoardId::parse(b).ok())
            .map(Scope::WriteBoard),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_authenticate_by_digest_and_scopes_decide() {
        let spec = format!(
            "eu={}@write:season-1 ; ops={}@admin;reader={}@read;support={}@moderate;feed={}@events",
            hash_token("eu-secret"),
            hash_token("ops-secret"),
            hash_token("read-secret"),
            hash_token("support-secret"),
            hash_token("feed-secret")
        );
        let table = TokenTable::parse(&spec).expect("valid");
        let season = BoardId::parse("season-1").expect("board");
        let other = BoardId::parse("season-2").expect("board");
        let eu = table.authenticate("eu-secret").expect("eu");
        assert_eq!(eu.name, "eu");
        assert!(eu.may_write(&season) && !eu.may_write(&other) && eu.may_read());
        let ops = table.authenticate("ops-secret").expect("ops");
        assert!(ops.may_write(&other) && ops.may_administer());
        let reader = table.authenticate("read-secret").expect("reader");
        assert!(!reader.may_write(&season) && reader.may_read() && !reader.may_administer());
        assert!(!eu.may_administer());
        assert!(ops.may_moderate() && !eu.may_moderate() && !reader.may_moderate());
        let support = table.authenticate("support-secret").expect("support");
        assert!(support.may_moderate() && support.may_read());
        assert!(!support.may_administer() && !support.may_write(&season));
        let feed = table.authenticate("feed-secret").expect("feed");
        assert!(feed.may_read_events() && feed.may_read());
        assert!(!feed.may_moderate() && !feed.may_write(&season) && !feed.may_administer());
        assert!(ops.may_read_events());
        assert!(!reader.may_read_events() && !support.may_read_events() && !eu.may_read_events());
        assert!(table.authenticate("eu-secreT").is_none());
        assert!(table.authenticate("").is_none());
        assert_eq!(
            hash_token("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
    }

    #[test]
    fn bad_entries_are_refused_without_echoing_digests() {
        let good = hash_token("x");
        for (spec, needle) in [
            ("nohash".to_owned(), "entry 1"),
            (format!("a={good}"), "scopes"),
            (format!("a={}@admin", &good[..63]), "64 hex"),
            (format!("a={good}@write:bad board"), "unknown scope"),
            (format!("a={good}@root"), "unknown scope"),
            (format!("a={good}@admin;a={good}@read"), "used twice"),
            (format!("bad name={good}@admin"), "name"),
        ] {
            let err = TokenTable::parse(&spec).expect_err(&spec);
            assert!(err.contains(needle), "{spec}: {err}");
            assert!(!err.contains(&good), "{err}");
        }
        assert!(TokenTable::parse("").expect("empty").is_empty());
    }
}
