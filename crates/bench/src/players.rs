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

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let (signing, verifying) = player::generate("EdDSA").expect("an Ed25519 key pair");
        let key = SigningKey::parse("bench", &signing).expect("the key just generated");
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
                .expect("a token")
            })
            .collect();
        Keys {
            entry: format!("bench={verifying}"),
            tokens,
        }
    })
}

/// The `auth.player_keys` entry of the run's key.
pub fn keys_entry() -> String {
    keys().entry.clone()
}

fn user(client: usize) -> String {
    format!("client-{}", client % PLAYERS)
}

/// An `add` command of connection `client`'s own player to `board`, with the player's token, or
/// with the service token (the comparison's other side).
pub fn own_command(board: &str, client: usize, player_token: bool) -> Vec<u8> {
    let event = uuid::Uuid::new_v4();
    let delta = event.as_u128() % 100 + 1;
    let token = if player_token {
        keys().tokens[client % PLAYERS].as_str()
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
