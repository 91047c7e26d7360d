//! Settings that hold a password or a token (`database.url`, `database.direct_url`,
//! `redis.url`, `auth.tokens`): their `Debug` and `Serialize` forms never show it, so no log
//! line, settings dump or error message built from the settings can. Deserializing is
//! transparent (the value as written), and the value itself is reached as a `&str` (`Deref`,
//! [`Secret::as_str`]) by the code that connects or parses it. There is no `Display`: writing
//! one into a message takes a visible `&*` or `as_str()`.
//!
//! The loader reads the built-in defaults through `Serialize` (see `read_from`), so a default
//! must hold no secret; none does, and `defaults_are_valid` would fail if one did.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::redact_url;

/// How a [`Secret`] is shown in `Debug` and `Serialize`.
pub trait Redaction {
    fn redact(value: &str) -> String;
}

/// Shown as `***`; an empty value as empty (that none is set is no secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Whole;

impl Redaction for Whole {
    fn redact(value: &str) -> String {
        if value.is_empty() {
            String::new()
        } else {
            "***".to_owned()
        }
    }
}

/// A URL, or a comma-separated list of them (Redis Cluster seeds), shown with each password
/// replaced by `***`: the host stays visible, which is what a log reader needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UrlPassword;

impl Redaction for UrlPassword {
    fn redact(value: &str) -> String {
        if value.is_empty() {
            return String::new();
        }
        value
            .split(',')
            .map(|url| redact_url(url.trim()))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A setting's secret value; `R` says how it is shown.
pub struct Secret<R = Whole> {
    value: String,
    shown_as: PhantomData<R>,
}

/// A URL that may carry a password.
pub type SecretUrl = Secret<UrlPassword>;

impl<R> Secret<R> {
    pub fn new(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            shown_as: PhantomData,
        }
    }

    /// The value itself, for the code that uses it (connects, parses). Never log it.
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

impl<R: Redaction> Secret<R> {
    /// The value as `Debug` and `Serialize` show it.
    pub fn redacted(&self) -> String {
        R::redact(&self.value)
    }
}

impl<R> Deref for Secret<R> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.value
    }
}

impl<R> From<String> for Secret<R> {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl<R> From<&str> for Secret<R> {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

// Written out rather than derived: a derive would require `R` itself to be `Clone`, `Default`…
impl<R> Clone for Secret<R> {
    fn clone(&self) -> Self {
        Self::new(self.value.clone())
    }
}

impl<R> Default for Secret<R> {
    fn default() -> Self {
        Self::new(String::new())
    }
}

impl<R> PartialEq for Secret<R> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<R> Eq for Secret<R> {}

impl<R: Redaction> fmt::Debug for Secret<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.redacted(), f)
    }
}

impl<R: Redaction> Serialize for Secret<R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.redacted())
    }
}

impl<'de, R> Deserialize<'de> for Secret<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_serialize_hide_the_secret_and_deserialize_keeps_it() {
        let url: SecretUrl = "postgres://u:s3cret@db:5432/x".into();
        assert_eq!(format!("{url:?}"), r#""postgres://u:***@db:5432/x""#);
        assert_eq!(
            serde_json::to_string(&url).expect("serialize"),
            r#""postgres://u:***@db:5432/x""#
        );
        assert_eq!(url.as_str(), "postgres://u:s3cret@db:5432/x");
        let seeds: SecretUrl = "redis://:pw1@a:6379, redis://:pw2@b:6379".into();
        assert_eq!(seeds.redacted(), "redis://:***@a:6379,redis://:***@b:6379");
        let token: Secret = "name=abc@admin".into();
        assert_eq!(format!("{token:?}"), r#""***""#);
        assert_eq!(format!("{:?}", Secret::<Whole>::default()), r#""""#);
        let back: Secret = serde_json::from_str(r#""name=abc@admin""#).expect("deserialize");
        assert_eq!(back, token);
    }
}
