//! Names the code makes or checks in more than one place: the identifier alphabet (board ids,
//! the Redis namespace, token names: all of them end up inside Redis keys or log lines) and
//! a process's name among its replicas. A leaf: it imports nothing of the crate.

/// The longest identifier: board ids, namespaces and token names share it.
pub const MAX_IDENTIFIER_LEN: usize = 64;

/// Whether `raw` is 1 to [`MAX_IDENTIFIER_LEN`] characters of A-Z, a-z, 0-9, `_`, `.` or `-`.
/// Narrow on purpose: no braces (they would change a Redis Cluster hash tag), no `:` (the key
/// separator), no spaces or control characters.
pub fn is_identifier(raw: &str) -> bool {
    (1..=MAX_IDENTIFIER_LEN).contains(&raw.len())
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// This process's name among its replicas: the host name and 8 random hex digits, new at each
/// start. Kubernetes sets `HOSTNAME` to the pod name, so the name says which pod it is;
/// without `HOSTNAME` the host part is `fallback`.
pub fn instance_id(fallback: &str) -> String {
    host_and_random(fallback, 8)
}

/// As [`instance_id`], with a whole random UUID (32 hex digits): the token of a lock, which
/// must never equal another holder's.
pub fn holder_token(fallback: &str) -> String {
    host_and_random(fallback, 32)
}

fn host_and_random(fallback: &str, digits: usize) -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| fallback.to_owned());
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}", &random[..digits.min(random.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_identifier("season-1.eu_west"));
        assert!(is_identifier(&"a".repeat(64)));
        for bad in ["", "a b", "a{b}", "a:b", "é", "a\nb", &"a".repeat(65)] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
    }

    #[test]
    fn instance_ids_are_the_host_and_a_random_suffix() {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "fallback".to_owned());
        let a = instance_id("fallback");
        let suffix = a
            .strip_prefix(&format!("{host}-"))
            .unwrap_or_else(|| panic!("{a} starts with the host"));
        assert_eq!(suffix.len(), 8, "{a}");
        assert!(suffix.bytes().all(|b| b.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, instance_id("fallback"), "new at each call");
        let token = holder_token("fallback");
        assert_eq!(token.len(), host.len() + 1 + 32, "{token}");
    }
}
