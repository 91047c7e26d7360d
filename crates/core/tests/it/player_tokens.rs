//! Player tokens (`auth/player.rs`) as the api verifies them and lbctl mints them: every way a
//! token is refused, each with its own error, and keys that are never echoed.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ledgerboard_core::auth::player::{
    CLOCK_SKEW_S, Claims, PlayerKeys, PlayerTokenError, SigningKey, generate, now_s,
};
use ledgerboard_core::model::BoardId;

const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"; // 35 bytes

fn claims(sub: &str, boards: &[&str], exp: u64) -> Claims {
    Claims {
        sub: sub.to_owned(),
        boards: boards.iter().map(|b| (*b).to_owned()).collect(),
        exp,
        nbf: None,
        aud: None,
    }
}

fn hs(kid: &str) -> SigningKey {
    SigningKey::parse(kid, &format!("HS256:{SECRET}")).expect("signing key")
}

fn board(id: &str) -> BoardId {
    BoardId::parse(id).expect("board")
}

#[test]
fn a_minted_token_verifies_and_names_its_player_and_boards() {
    let keys = PlayerKeys::parse(&format!("k1=HS256:{SECRET}"), "").expect("keys");
    let token = hs("k1")
        .mint(&claims("alice", &["runs", "daily-*"], now_s() + 600))
        .expect("mint");
    let player = keys.verify(&token).expect("verifies");
    assert_eq!(player.user.as_str(), "alice");
    assert_eq!(player.kid, "k1");
    assert!(player.may_use(&board("runs")));
    assert!(player.may_use(&board("daily-eu")));
    assert!(!player.may_use(&board("runs2")) && !player.may_use(&board("weekly")));
}

#[test]
fn each_bad_token_is_refused_with_its_own_code() {
    let keys = PlayerKeys::parse(&format!("k1=HS256:{SECRET}"), "").expect("keys");
    let now = now_s();
    let good = hs("k1")
        .mint(&claims("alice", &["runs"], now + 600))
        .expect("mint");
    // Another secret under the same kid: a forged signature.
    let other = SigningKey::parse(
        "k1",
        "HS256:b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXIh",
    )
    .expect("key");
    let forged = other
        .mint(&claims("alice", &["runs"], now + 600))
        .expect("mint");
    assert_eq!(keys.verify(&forged), Err(PlayerTokenError::Signature));
    // The payload swapped for another player's, the signature kept.
    let parts: Vec<&str> = good.split('.').collect();
    let body = URL_SAFE_NO_PAD.encode(format!(
        r#"{{"sub":"mallory","boards":["runs"],"exp":{}}}"#,
        now + 600
    ));
    let swapped = format!("{}.{body}.{}", parts[0], parts[2]);
    assert_eq!(keys.verify(&swapped), Err(PlayerTokenError::Signature));
    // Expired beyond the skew; within the skew it still passes.
    let expired = hs("k1")
        .mint(&claims("alice", &["runs"], now - CLOCK_SKEW_S - 5))
        .expect("mint");
    assert_eq!(keys.verify(&expired), Err(PlayerTokenError::Expired));
    let just = hs("k1")
        .mint(&claims("alice", &["runs"], now - 5))
        .expect("mint");
    assert!(keys.verify(&just).is_ok());
    let mut early = claims("alice", &["runs"], now + 600);
    early.nbf = Some(now + CLOCK_SKEW_S + 60);
    let early = hs("k1").mint(&early).expect("mint");
    assert_eq!(keys.verify(&early), Err(PlayerTokenError::NotYetValid));
    // A kid rotated out.
    let rotated = hs("k0")
        .mint(&claims("alice", &["runs"], now + 600))
        .expect("mint");
    assert_eq!(keys.verify(&rotated), Err(PlayerTokenError::UnknownKey));
    // Claims that do not parse into a player and boards.
    for bad in [
        claims("alice", &[], now + 600),
        claims("", &["runs"], now + 600),
        claims("alice", &["bad board"], now + 600),
        claims("alice", &["runs~20260101"], now + 600),
    ] {
        let token = hs("k1").mint(&bad).expect("mint");
        assert_eq!(
            keys.verify(&token),
            Err(PlayerTokenError::Claims),
            "{bad:?}"
        );
    }
    assert_eq!(keys.verify("not a jwt"), Err(PlayerTokenError::Malformed));
    assert_eq!(keys.verify(""), Err(PlayerTokenError::Malformed));
}

#[test]
fn the_algorithm_is_the_keys_never_the_tokens() {
    let (signing, verifying) = generate("EdDSA").expect("key");
    let keys = PlayerKeys::parse(&format!("ed={verifying}"), "").expect("keys");
    let ed = SigningKey::parse("ed", &signing).expect("signing");
    let good = ed.mint(&claims("bob", &["*"], now_s() + 60)).expect("mint");
    assert_eq!(keys.verify(&good).expect("verifies").user.as_str(), "bob");
    // HS256 under the EdDSA key's kid, keyed with the public key's bytes (the classic
    // confusion): refused before any HMAC is computed.
    let public = verifying.strip_prefix("EdDSA:").expect("prefix");
    let confused = SigningKey::parse("ed", &format!("HS256:{public}"))
        .expect("key")
        .mint(&claims("bob", &["*"], now_s() + 60))
        .expect("mint");
    assert_eq!(keys.verify(&confused), Err(PlayerTokenError::Signature));
    // alg none: a header with no signature.
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"ed"}"#);
    let body = URL_SAFE_NO_PAD.encode(format!(
        r#"{{"sub":"bob","boards":["*"],"exp":{}}}"#,
        now_s() + 60
    ));
    assert!(keys.verify(&format!("{header}.{body}.")).is_err());
}

#[test]
fn es256_keys_and_several_keys_at_once() {
    let (es_signing, es_verifying) = generate("ES256").expect("key");
    let (hs_signing, hs_verifying) = generate("HS256").expect("key");
    let keys =
        PlayerKeys::parse(&format!("new={es_verifying}; old={hs_verifying}"), "").expect("keys");
    for (kid, signing) in [("new", &es_signing), ("old", &hs_signing)] {
        let key = SigningKey::parse(kid, signing).expect("signing");
        let token = key
            .mint(&claims("carol", &["runs"], now_s() + 60))
            .expect("mint");
        assert_eq!(keys.verify(&token).expect(kid).kid, kid);
    }
}

#[test]
fn the_audience_is_checked_when_configured() {
    let keys = PlayerKeys::parse(&format!("k1=HS256:{SECRET}"), "ledgerboard").expect("keys");
    let mut c = claims("alice", &["runs"], now_s() + 60);
    let none = hs("k1").mint(&c).expect("mint");
    assert_eq!(keys.verify(&none), Err(PlayerTokenError::Audience));
    c.aud = Some("another-service".into());
    let other = hs("k1").mint(&c).expect("mint");
    assert_eq!(keys.verify(&other), Err(PlayerTokenError::Audience));
    c.aud = Some("ledgerboard".into());
    assert!(keys.verify(&hs("k1").mint(&c).expect("mint")).is_ok());
    // Without an audience configured, a token minted for some audience is not ours.
    let open = PlayerKeys::parse(&format!("k1=HS256:{SECRET}"), "").expect("keys");
    assert_eq!(open.verify(&other), Err(PlayerTokenError::Audience));
}

#[test]
fn bad_key_entries_are_refused_without_echoing_the_material() {
    for (spec, needle) in [
        ("nokey".to_owned(), "entry 1"),
        ("k=HS256".to_owned(), "ALG:key"),
        (format!("k=RS256:{SECRET}"), "HS256, EdDSA or ES256"),
        ("k=HS256:c2hvcnQ".to_owned(), "at least 32 bytes"),
        (format!("k=EdDSA:{SECRET}"), "EdDSA key"),
        (format!("k=ES256:{SECRET}"), "ES256 key"),
        (format!("k=HS256:{SECRET};k=HS256:{SECRET}"), "used twice"),
        (format!("bad kid=HS256:{SECRET}"), "kid"),
    ] {
        let err = PlayerKeys::parse(&spec, "").expect_err(&spec);
        assert!(err.contains(needle), "{spec}: {err}");
        assert!(!err.contains(SECRET), "{err}");
    }
    assert!(PlayerKeys::parse("", "").expect("empty").is_empty());
    assert!(
        !format!(
            "{:?}",
            PlayerKeys::parse(&format!("k=HS256:{SECRET}"), "").expect("keys")
        )
        .contains(SECRET)
    );
}
