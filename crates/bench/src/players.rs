//! Player tokens for the board kinds (issue 38's figure: a command with a player token against
//! the same command with a service token, since a player token's signature is verified on every
//! request): one EdDSA key for the run, whose entry the api is given, and one player per
//! connection, each posting its own user id.

use std::sync::OnceLock;

use ledgerboard_core::auth::player::{self, Claims, SigningKey};
use ledgerboard_testkit::TEST_TOKEN;

use crate::load;

/// Connections that get a player of their own: more than any phase opens.
const PLAYERS: usize = 512;

struct Keys {
    /// The `auth.player_keys` entry.
    entry: String,
    /// One token per player, valid for a day.
    tokens: Vec<String>,
}

static KEYS: OnceLock<Keys> = OnceLock::new();

/// The `auth.player_keys` entry of the run's key, made (with every player's token) the first
/// time it is asked for: before any api starts.
pub fn keys_entry() -> anyhow::Result<String> {
    if let Some(keys) = KEYS.get() {
        return Ok(keys.entry.clone());
    }
    let failed = |e: String| anyhow::anyhow!("the benchmark's player key: {e}");
    let (signing, verifying) = player::generate("EdDSA").map_err(failed)?;
    let key = SigningKey::parse("bench", &signing).map_err(failed)?;
    let exp = player::now_s() + 24 * 3600;
    let tokens = (0..PLAYERS)
        .map(|c| {
            key.mint(&Claims {
                sub: user(c),
                boards: vec!["kind-*".to_owned()],
                exp,
                nbf: None,
                aud: None,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    // Another caller may have set it meanwhile: then its key is the one the api was given.
    let keys = KEYS.get_or_init(|| Keys {
        entry: format!("bench={verifying}"),
        tokens,
    });
    Ok(keys.entry.clone())
}

fn user(client: usize) -> String {
    format!("client-{}", client % PLAYERS)
}

/// An `add` command of connection `client`'s own player to `board`, with the player's token, or
/// with the service token (the comparison's other side).
pub fn own_command(board: &str, client: usize, player_token: bool) -> Vec<u8> {
    let event = uuid::Uuid::new_v4();
    let delta = event.as_u128() % 100 + 1;
    // Without the keys (no api was started) the token is empty: the api answers 401, and the
    // load fails naming it.
    let token = if player_token {
        KEYS.get()
            .map_or("", |k| k.tokens[client % PLAYERS].as_str())
    } else {
        TEST_TOKEN
    };
    load::request(
        "POST",
        &format!("/v1/boards/{board}/scores"),
        Some(token),
        Some(&format!(
            r#"{{"event_id":"{event}","user_id":"{}","delta":{delta}}}"#,
            user(client)
        )),
    )
}

/// Connection `client`'s player: its user id and its token (empty before the keys were made).
pub fn player(client: usize) -> (String, String) {
    let token = KEYS
        .get()
        .map(|k| k.tokens[client % PLAYERS].clone())
        .unwrap_or_default();
    (user(client), token)
}
