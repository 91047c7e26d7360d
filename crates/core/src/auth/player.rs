//! Player tokens: a JWT a game's own backend mints for one player, so that the game client can
//! post that player's scores itself without holding a server credential (issue 38).
//!
//! `auth.player_keys` holds the keys that verify them, entries `kid=ALG:material` separated
//! by `;`, each algorithm pinned to its key id (a token never chooses between HMAC and a public
//! key, and `none` is never accepted):
//!
//! ```text
//! k1=HS256:<secret, base64url, at least 32 bytes>
//! k2=EdDSA:<Ed25519 public key: the JWK's x, base64url>
//! k3=ES256:<P-256 public key: the JWK's x>:<the JWK's y>
//! ```
//!
//! Several keys are accepted at once, so a key rotates by adding the new `kid`, minting with
//! it, and removing the old one once its tokens have expired; a token whose `kid` names no key
//! (rotated out, or never configured) is refused with its own code.
//!
//! The claims: `sub` (the player's user id, the only one the token may write), `boards` (board
//! ids, or prefixes ending in `*`), `exp` (required; refused past it, with
//! [`CLOCK_SKEW_S`] of tolerance), `nbf` (optional), `aud` (required to name
//! `auth.player_audience` when that is set, refused when it is not set).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::model::{BoardId, UserId};

/// How far a token's `exp` and `nbf` may be off the api's clock: the backend that minted it
/// runs on another machine.
pub const CLOCK_SKEW_S: u64 = 30;

/// The shortest HMAC secret accepted: HS256's own output size.
const MIN_SECRET_BYTES: usize = 32;

/// At most this many board patterns in one token (it travels in every request's header).
pub const MAX_BOARDS: usize = 32;

/// Why a player token was refused. `code()` is the stable name in the api's error body; every
/// one is a 401 (the token does not authenticate), and nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlayerTokenError {
    #[error("the player token is not a JWT with a kid in its header")]
    Malformed,
    #[error(
        "the player token's kid names no key of auth.player_keys (rotated out, or never configured)"
    )]
    UnknownKey,
    #[error("the player token's signature does not verify with its kid's key and algorithm")]
    Signature,
    #[error("the player token has expired")]
    Expired,
    #[error("the player token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the player token's aud does not name this service")]
    Audience,
    #[error(
        "the player token's claims must be sub (a user id), boards (1 to {MAX_BOARDS} board ids or prefixes ending in *) and exp"
    )]
    Claims,
}

impl PlayerTokenError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Malformed => "token_malformed",
            Self::UnknownKey => "token_key_unknown",
            Self::Signature => "token_signature",
            Self::Expired => "token_expired",
            Self::NotYetValid => "token_not_yet_valid",
            Self::Audience => "token_audience",
            Self::Claims => "token_claims",
        }
    }
}

/// Boards a token names: a board id, or every board whose id starts with a prefix (`runs*`;
/// `*` alone: every board).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardPattern {
    Exact(BoardId),
    Prefix(String),
}

impl BoardPattern {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.strip_suffix('*') {
            Some(prefix) => {
                // The prefix of an id is made of an id's characters (no period separator).
                let ok = prefix.len() < 64
                    && prefix
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
                ok.then(|| Self::Prefix(prefix.to_owned()))
            }
            // A board as a client names it: never one of its periods.
            None => BoardId::parse(raw).ok().map(Self::Exact),
        }
    }

    pub fn matches(&self, board: &BoardId) -> bool {
        match self {
            Self::Exact(b) => b == board,
            Self::Prefix(p) => board.as_str().starts_with(p.as_str()),
        }
    }
}

/// A verified player token: who the player is and where it may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Player {
    pub user: UserId,
    pub boards: Vec<BoardPattern>,
    /// The key that verified it (for logs and metrics; never the key itself).
    pub kid: String,
    /// Its `exp`: a verification kept for reuse ends with it.
    pub exp: u64,
}

impl Player {
    /// Whether the token names `board` (a period of a board counts as the board).
    pub fn may_use(&self, board: &BoardId) -> bool {
        let plain = board.base();
        self.boards.iter().any(|p| p.matches(&plain))
    }
}

/// The claims as a backend writes them.
#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub boards: Vec<String>,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

struct VerifyingKey {
    key: DecodingKey,
    algorithm: Algorithm,
}

/// The configured keys, by `kid`.
#[derive(Default)]
pub struct PlayerKeys {
    keys: HashMap<String, VerifyingKey>,
    audience: Option<String>,
}

// Not derived: an HMAC key verifies and mints alike.
impl std::fmt::Debug for PlayerKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut kids: Vec<&String> = self.keys.keys().collect();
        kids.sort();
        f.debug_struct("PlayerKeys").field("kids", &kids).finish()
    }
}

/// The algorithms a key may be configured with, as `auth.player_keys` spells them.
fn algorithm(name: &str) -> Option<Algorithm> {
    match name {
        "HS256" => Some(Algorithm::HS256),
        "EdDSA" => Some(Algorithm::EdDSA),
        "ES256" => Some(Algorithm::ES256),
        _ => None,
    }
}

impl PlayerKeys {
    /// Parses `auth.player_keys` and `auth.player_audience`. Errors name the entry by its
    /// position and kid, never by its material.
    pub fn parse(spec: &str, audience: &str) -> Result<PlayerKeys, String> {
        let mut keys = HashMap::new();
        for (n, kid, rest) in super::named_entries(spec, "kid", "kid=ALG:key")? {
            let (alg, material) = rest
                .split_once(':')
                .ok_or_else(|| format!("entry {n} ({kid}): expected ALG:key"))?;
            let algorithm = algorithm(alg.trim()).ok_or_else(|| {
                format!("entry {n} ({kid}): the algorithm must be HS256, EdDSA or ES256")
            })?;
            let key = decoding_key(algorithm, material.trim())
                .ok_or_else(|| format!("entry {n} ({kid}): {}", key_shape(algorithm)))?;
            keys.insert(kid.to_owned(), VerifyingKey { key, algorithm });
        }
        let audience = Some(audience.trim().to_owned()).filter(|a| !a.is_empty());
        Ok(PlayerKeys { keys, audience })
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The player a token stands for, verified with the key its `kid` names and that key's
    /// algorithm only.
    pub fn verify(&self, token: &str) -> Result<Player, PlayerTokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| PlayerTokenError::Malformed)?;
        let kid = header.kid.ok_or(PlayerTokenError::Malformed)?;
        let key = self.keys.get(&kid).ok_or(PlayerTokenError::UnknownKey)?;
        // The header's alg must be the key's: an HMAC key is never tried as a public key's
        // algorithm, nor the other way round.
        if header.alg != key.algorithm {
            return Err(PlayerTokenError::Signature);
        }
        let mut validation = Validation::new(key.algorithm);
        validation.leeway = CLOCK_SKEW_S;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        // Without an audience configured, the library's default holds: a token that carries
        // an aud is refused (it was minted for someone else).
        if let Some(aud) = &self.audience {
            validation.set_audience(&[aud]);
            validation.required_spec_claims.insert("aud".to_owned());
        }
        let data =
            jsonwebtoken::decode::<Claims>(token, &key.key, &validation).map_err(|e| {
                match e.kind() {
                    ErrorKind::ExpiredSignature => PlayerTokenError::Expired,
                    ErrorKind::ImmatureSignature => PlayerTokenError::NotYetValid,
                    ErrorKind::InvalidAudience => PlayerTokenError::Audience,
                    ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm => {
                        PlayerTokenError::Signature
                    }
                    ErrorKind::MissingRequiredClaim(c) if c == "aud" => PlayerTokenError::Audience,
                    ErrorKind::MissingRequiredClaim(_) | ErrorKind::Json(_) => {
                        PlayerTokenError::Claims
                    }
                    _ => PlayerTokenError::Malformed,
                }
            })?;
        let claims = data.claims;
        let user = UserId::parse(&claims.sub).map_err(|_| PlayerTokenError::Claims)?;
        if claims.boards.is_empty() || claims.boards.len() > MAX_BOARDS {
            return Err(PlayerTokenError::Claims);
        }
        let boards = claims
            .boards
            .iter()
            .map(|b| BoardPattern::parse(b))
            .collect::<Option<Vec<_>>>()
            .ok_or(PlayerTokenError::Claims)?;
        Ok(Player {
            user,
            boards,
            kid,
            exp: claims.exp,
        })
    }
}

fn key_shape(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::HS256 => "an HS256 secret is base64url of at least 32 bytes",
        Algorithm::EdDSA => "an EdDSA key is the public key's JWK x (base64url of 32 bytes)",
        _ => "an ES256 key is the public key's JWK x and y, base64url, separated by :",
    }
}

fn decoding_key(algorithm: Algorithm, material: &str) -> Option<DecodingKey> {
    match algorithm {
        Algorithm::HS256 => {
            let secret = URL_SAFE_NO_PAD
                .decode(material.trim_end_matches('='))
                .ok()?;
            (secret.len() >= MIN_SECRET_BYTES).then(|| DecodingKey::from_secret(&secret))
        }
        Algorithm::EdDSA => {
            let x = URL_SAFE_NO_PAD.decode(material).ok()?;
            if x.len() != 32 {
                return None;
            }
            DecodingKey::from_ed_components(material).ok()
        }
        _ => {
            let (x, y) = material.split_once(':')?;
            let (xb, yb) = (
                URL_SAFE_NO_PAD.decode(x).ok()?,
                URL_SAFE_NO_PAD.decode(y).ok()?,
            );
            if xb.len() != 32 || yb.len() != 32 {
                return None;
            }
            DecodingKey::from_ec_components(x, y).ok()
        }
    }
}

/// A key that mints player tokens, as `lbctl token player` and the tests hold it: the private
/// half of an `auth.player_keys` entry.
pub struct SigningKey {
    pub kid: String,
    algorithm: Algorithm,
    key: EncodingKey,
}

impl SigningKey {
    /// `ALG:material`: `HS256:<secret, base64url>`, or `EdDSA:` / `ES256:` and the PKCS#8
    /// private key, base64url (what [`generate`] prints).
    pub fn parse(kid: &str, spec: &str) -> Result<SigningKey, String> {
        let (alg, material) = spec
            .trim()
            .split_once(':')
            .ok_or("expected ALG:key (HS256, EdDSA or ES256)")?;
        let algorithm = algorithm(alg).ok_or("the algorithm must be HS256, EdDSA or ES256")?;
        let bytes = URL_SAFE_NO_PAD
            .decode(material.trim_end_matches('='))
            .map_err(|_| "the key must be base64url")?;
        let key = match algorithm {
            Algorithm::HS256 if bytes.len() >= MIN_SECRET_BYTES => EncodingKey::from_secret(&bytes),
            Algorithm::HS256 => return Err("an HS256 secret has at least 32 bytes".into()),
            Algorithm::EdDSA => EncodingKey::from_ed_der(&bytes),
            _ => EncodingKey::from_ec_der(&bytes),
        };
        Ok(SigningKey {
            kid: kid.to_owned(),
            algorithm,
            key,
        })
    }

    /// A token for `claims`, with this key's `kid` and algorithm.
    pub fn mint(&self, claims: &Claims) -> Result<String, String> {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key)
            .map_err(|_| "the key does not sign with its algorithm (is it the private key?)".into())
    }
}

/// Seconds since the Unix epoch, for `exp`.
pub fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A new key for `algorithm` (`HS256`, `EdDSA` or `ES256`): the signing half, `ALG:<base64url>`
/// (for the backend that mints), and the verifying half, `ALG:<material>` (for
/// `auth.player_keys`; for HS256 the same secret).
pub fn generate(algorithm: &str) -> Result<(String, String), String> {
    use ring::rand::{SecureRandom, SystemRandom};
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
    let rng = SystemRandom::new();
    let failed = |_| "the system's random source failed".to_owned();
    match algorithm {
        "HS256" => {
            let mut secret = [0u8; MIN_SECRET_BYTES];
            rng.fill(&mut secret).map_err(failed)?;
            let s = URL_SAFE_NO_PAD.encode(secret);
            Ok((format!("HS256:{s}"), format!("HS256:{s}")))
        }
        "EdDSA" => {
            let doc = Ed25519KeyPair::generate_pkcs8(&rng).map_err(failed)?;
            let pair = Ed25519KeyPair::from_pkcs8(doc.as_ref()).map_err(|_| "bad key")?;
            Ok((
                format!("EdDSA:{}", URL_SAFE_NO_PAD.encode(doc.as_ref())),
                format!(
                    "EdDSA:{}",
                    URL_SAFE_NO_PAD.encode(pair.public_key().as_ref())
                ),
            ))
        }
        "ES256" => {
            let alg = &ECDSA_P256_SHA256_FIXED_SIGNING;
            let doc = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(failed)?;
            let pair = EcdsaKeyPair::from_pkcs8(alg, doc.as_ref(), &rng).map_err(|_| "bad key")?;
            // An uncompressed point: 0x04, x, y.
            let point = pair.public_key().as_ref();
            Ok((
                format!("ES256:{}", URL_SAFE_NO_PAD.encode(doc.as_ref())),
                format!(
                    "ES256:{}:{}",
                    URL_SAFE_NO_PAD.encode(&point[1..33]),
                    URL_SAFE_NO_PAD.encode(&point[33..65])
                ),
            ))
        }
        _ => Err("the algorithm must be HS256, EdDSA or ES256".into()),
    }
}
