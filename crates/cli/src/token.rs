//! `lbctl token new|hash|player-key|player`: bearer tokens for `auth.tokens`, and keys and
//! tokens for players (`auth.player_keys`); needs no settings or database.

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::auth::player::{self, Claims, PlayerKeys, SigningKey};
use ledgerboard_core::auth::{TokenTable, hash_token};

/// Where `lbctl token player` reads the signing key, so that it never appears in a shell's
/// history or a process list.
pub const PLAYER_KEY_ENV: &str = "LEDGERBOARD_PLAYER_SIGNING_KEY";

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Generate a random token; print it once, and the `auth.tokens` entry that accepts it.
    New {
        /// The token's name (in logs and rate limits): 1 to 64 of A-Z a-z 0-9 - _ .
        #[arg(long)]
        name: String,
        /// Scopes: write:*, write:<board>, read, moderate, events, admin (repeat or comma-separate).
        #[arg(long, required = true, value_delimiter = ',')]
        scope: Vec<String>,
    },
    /// Read a token from stdin and print its SHA-256 digest.
    Hash,
    /// Generate a key for player tokens: print the signing half (for the game's backend, and
    /// for `lbctl token player`) and the `auth.player_keys` entry that verifies it.
    PlayerKey {
        /// The key's id, which tokens carry in their header (`kid`): 1 to 64 of A-Z a-z 0-9
        /// - _ .
        #[arg(long)]
        kid: String,
        /// HS256 (a shared secret: the entry is the secret), EdDSA or ES256 (the entry is the
        /// public key only).
        #[arg(long, default_value = "EdDSA")]
        alg: String,
    },
    /// Mint a player token for testing, with the signing key (as `player-key` printed it) read
    /// from the environment variable LEDGERBOARD_PLAYER_SIGNING_KEY.
    Player {
        /// The key's id (`kid`).
        #[arg(long)]
        kid: String,
        /// The player's user id (`sub`): the only one the token writes.
        #[arg(long)]
        user: String,
        /// Boards it may write and read its own entry on: board ids, or prefixes ending in *
        /// (repeat or comma-separate).
        #[arg(long = "board", required = true, value_delimiter = ',')]
        boards: Vec<String>,
        /// How long it is valid, in seconds.
        #[arg(long, default_value_t = 900)]
        ttl_s: u64,
        /// The `aud` claim, when `auth.player_audience` is set.
        #[arg(long)]
        audience: Option<String>,
    },
}

pub fn run(command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::New { name, scope } => {
            // 244 random bits from the OS, through two v4 UUIDs (122 random bits each).
            let token = format!(
                "lb_{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            );
            let entry = format!("{name}={}@{}", hash_token(&token), scope.join(","));
            TokenTable::parse(&entry).map_err(|e| anyhow::anyhow!(e))?;
            println!("token (shown once; give it to the client): {token}");
            println!("auth.tokens entry (entries are separated by ;): {entry}");
        }
        TokenCommand::Hash => {
            let mut token = String::new();
            std::io::stdin().read_line(&mut token)?;
            let token = token.trim_end_matches(['\r', '\n']);
            anyhow::ensure!(!token.is_empty(), "no token on stdin");
            println!("{}", hash_token(token));
        }
        TokenCommand::PlayerKey { kid, alg } => {
            let (signing, verifying) = player::generate(&alg).map_err(|e| anyhow::anyhow!(e))?;
            let entry = format!("{kid}={verifying}");
            PlayerKeys::parse(&entry, "").map_err(|e| anyhow::anyhow!(e))?;
            println!("signing key (shown once; keep it on the game's backend): {signing}");
            println!("auth.player_keys entry (entries are separated by ;): {entry}");
        }
        TokenCommand::Player {
            kid,
            user,
            boards,
            ttl_s,
            audience,
        } => {
            let spec = std::env::var(PLAYER_KEY_ENV)
                .with_context(|| format!("set {PLAYER_KEY_ENV} to the signing key"))?;
            let key = SigningKey::parse(&kid, &spec).map_err(|e| anyhow::anyhow!(e))?;
            let claims = Claims {
                sub: user,
                boards,
                exp: player::now_s() + ttl_s,
                nbf: None,
                aud: audience,
            };
            println!("{}", key.mint(&claims).map_err(|e| anyhow::anyhow!(e))?);
        }
    }
    Ok(())
}
