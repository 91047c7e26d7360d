//! The signature of a delivery, after Stripe's scheme: the header
//! `Ledgerboard-Signature: t=<unix seconds>,v1=<hex>` where `<hex>` is the HMAC-SHA256, keyed
//! with the subscription's secret, of `"{t}.{body}"` (the timestamp, a dot, the body's exact
//! bytes). The timestamp is signed so that a captured delivery cannot be replayed later:
//! [`verify`] refuses one outside its tolerance.
//!
//! A receiver checks, in this order: the header parses; `t` is within the tolerance of its own
//! clock; one of the `v1` values equals the HMAC it computes (compared in constant time). More
//! than one `v1` may come (several secrets while one is rotated); other keys are ignored, so a
//! later scheme (`v2=`) can be added beside it. docs/dispatcher.md shows the check in a few
//! lines of code.

use std::time::Duration;

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "Ledgerboard-Signature";
/// The event's id (a receiver deduplicates by it) and kind, also in the body.
pub const EVENT_ID_HEADER: &str = "Ledgerboard-Event-Id";
pub const EVENT_KIND_HEADER: &str = "Ledgerboard-Event-Kind";
/// How far a signature's timestamp may be from the receiver's clock by default.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

fn key(secret: &str) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes())
}

fn message(timestamp: i64, body: &[u8]) -> Vec<u8> {
    let t = timestamp.to_string();
    let mut m = Vec::with_capacity(t.len() + 1 + body.len());
    m.extend_from_slice(t.as_bytes());
    m.push(b'.');
    m.extend_from_slice(body);
    m
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The hex HMAC-SHA256 of `"{timestamp}.{body}"` keyed with `secret`.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    hex(hmac::sign(&key(secret), &message(timestamp, body)).as_ref())
}

/// The header value: `t=<timestamp>,v1=<sign(…)>`.
pub fn header(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", sign(secret, timestamp, body))
}

/// A new secret: `whsec_` and 32 random bytes in hex.
pub fn generate_secret() -> Result<String, ring::error::Unspecified> {
    let mut bytes = [0u8; 32];
    SystemRandom::new().fill(&mut bytes)?;
    Ok(format!("whsec_{}", hex(&bytes)))
}

/// Why a delivery's signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("malformed signature header: {0}")]
    Malformed(&'static str),
    /// The timestamp is further than the tolerance from the receiver's clock: a replay, or a
    /// clock far off.
    #[error("signature timestamp {timestamp} is more than {tolerance_s} s from now ({now})")]
    Stale {
        timestamp: i64,
        now: i64,
        tolerance_s: u64,
    },
    /// No `v1` value is the HMAC of this body and timestamp with this secret.
    #[error("no signature matches the body")]
    Mismatch,
}

/// The receiver's check of a delivery: `header` is the `Ledgerboard-Signature` value, `body`
/// the request body's bytes as received, `now` the receiver's clock in Unix seconds. Returns
/// the signed timestamp.
pub fn verify(
    secret: &str,
    header: &str,
    body: &[u8],
    now: i64,
    tolerance: Duration,
) -> Result<i64, VerifyError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (k, v) = part
            .trim()
            .split_once('=')
            .ok_or(VerifyError::Malformed("expected key=value pairs"))?;
        match k {
            "t" => {
                if timestamp.is_some() {
                    return Err(VerifyError::Malformed("t given twice"));
                }
                let t: i64 = v
                    .parse()
                    .map_err(|_| VerifyError::Malformed("t is not an integer"))?;
                timestamp = Some(t);
            }
            "v1" => signatures.push(
                unhex(v)
                    .filter(|b| b.len() == 32)
                    .ok_or(VerifyError::Malformed("v1 is not 64 hex digits"))?,
            ),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(VerifyError::Malformed("no t"))?;
    if signatures.is_empty() {
        return Err(VerifyError::Malformed("no v1"));
    }
    let tolerance_s = tolerance.as_secs();
    if now.abs_diff(timestamp) > tolerance_s {
        return Err(VerifyError::Stale {
            timestamp,
            now,
            tolerance_s,
        });
    }
    let key = key(secret);
    let message = message(timestamp, body);
    // hmac::verify compares in constant time.
    if signatures
        .iter()
        .any(|s| hmac::verify(&key, &message, s).is_ok())
    {
        Ok(timestamp)
    } else {
        Err(VerifyError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_0123456789abcdef";
    const BODY: &[u8] = br#"{"id":"e","position":1}"#;

    #[test]
    fn a_signed_body_verifies() {
        let h = header(SECRET, 1_800_000_000, BODY);
        assert!(h.starts_with("t=1800000000,v1="), "{h}");
        assert_eq!(
            verify(SECRET, &h, BODY, 1_800_000_010, DEFAULT_TOLERANCE),
            Ok(1_800_000_000)
        );
        // Known answers, computed with Python's hmac module: what a receiver in another
        // language computes.
        assert_eq!(
            sign("key", 0, b""),
            "85841b4efc3cd7776c3c8f9b7cca9e281c550e5d19889d78e9e669c6337f000d"
        );
        assert_eq!(
            sign(SECRET, 1_800_000_000, BODY),
            "60ec735ab391da84d241c5ec6591f2325ca8aedc81a369d5d96c527976450306"
        );
    }

    #[test]
    fn a_forged_body_a_wrong_secret_and_a_stale_timestamp_are_refused() {
        let t = 1_800_000_000;
        let h = header(SECRET, t, BODY);
        assert_eq!(
            verify(
                SECRET,
                &h,
                br#"{"id":"e","position":2}"#,
                t,
                DEFAULT_TOLERANCE
            ),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify("whsec_another_secret_00", &h, BODY, t, DEFAULT_TOLERANCE),
            Err(VerifyError::Mismatch)
        );
        assert!(matches!(
            verify(SECRET, &h, BODY, t + 301, DEFAULT_TOLERANCE),
            Err(VerifyError::Stale { .. })
        ));
        assert!(matches!(
            verify(SECRET, &h, BODY, t - 301, DEFAULT_TOLERANCE),
            Err(VerifyError::Stale { .. })
        ));
        // The timestamp is signed: moving it forward breaks the signature.
        let moved = h.replace("t=1800000000", "t=1800000100");
        assert_eq!(
            verify(SECRET, &moved, BODY, t + 100, DEFAULT_TOLERANCE),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn malformed_headers_are_refused_and_rotation_is_allowed() {
        let t = 1_800_000_000;
        for bad in [
            "",
            "v1=00",
            "t=abc,v1=00",
            &format!("t={t}"),
            &format!("t={t},v1=zz"),
            &format!("t={t},t={t},v1={}", sign(SECRET, t, BODY)),
        ] {
            assert!(
                matches!(
                    verify(SECRET, bad, BODY, t, DEFAULT_TOLERANCE),
                    Err(VerifyError::Malformed(_))
                ),
                "{bad:?}"
            );
        }
        let rotated = format!(
            "t={t},v1={},v1={},v2=future",
            sign("whsec_old_secret_000000", t, BODY),
            sign(SECRET, t, BODY)
        );
        assert_eq!(verify(SECRET, &rotated, BODY, t, DEFAULT_TOLERANCE), Ok(t));
    }

    #[test]
    fn secrets_are_random_and_long() {
        let a = generate_secret().expect("random");
        let b = generate_secret().expect("random");
        assert_ne!(a, b);
        assert_eq!(a.len(), "whsec_".len() + 64);
        assert!(super::super::check_secret(&a).is_ok());
    }
}
