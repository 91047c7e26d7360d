//! Setting types that carry their bound: a value outside it cannot be built, so it cannot be
//! loaded either. In the file and the environment they are plain integers, as before.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

/// A value that broke a type's bound, for the message that names the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value} is outside {min}..={max}")]
pub struct OutOfRange {
    pub value: u64,
    pub min: u64,
    pub max: u64,
}

fn check(value: u64, min: u64, max: u64) -> Result<u64, OutOfRange> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(OutOfRange { value, min, max })
    }
}

/// A duration of `MIN..=MAX` milliseconds, written as its number of milliseconds (settings
/// named `*_ms`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Millis<const MIN: u64, const MAX: u64>(u64);

impl<const MIN: u64, const MAX: u64> Millis<MIN, MAX> {
    /// For constants: in a `const { }` block a value out of range fails the build, elsewhere
    /// it panics. Values read at run time go through [`Millis::new`].
    pub const fn of(ms: u64) -> Self {
        assert!(
            MIN <= ms && ms <= MAX,
            "milliseconds outside the setting's bound"
        );
        Self(ms)
    }

    pub fn new(ms: u64) -> Result<Self, OutOfRange> {
        check(ms, MIN, MAX).map(Self)
    }

    pub const fn get(self) -> Duration {
        Duration::from_millis(self.0)
    }

    /// The number of milliseconds.
    pub const fn ms(self) -> u64 {
        self.0
    }
}

impl<const MIN: u64, const MAX: u64> fmt::Debug for Millis<MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Millis<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ms = u64::deserialize(deserializer)?;
        Self::new(ms).map_err(serde::de::Error::custom)
    }
}

/// A count of `MIN..=MAX` (a pool size, a batch, a number of workers), written as a plain
/// integer. `MIN` is at least 1 wherever zero would mean nothing happens.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Count<const MIN: u64, const MAX: u64>(usize);

impl<const MIN: u64, const MAX: u64> Count<MIN, MAX> {
    /// As [`Millis::of`].
    pub const fn of(n: usize) -> Self {
        assert!(
            MIN <= n as u64 && n as u64 <= MAX,
            "count outside the setting's bound"
        );
        Self(n)
    }

    pub fn new(n: usize) -> Result<Self, OutOfRange> {
        check(n as u64, MIN, MAX).map(|_| Self(n))
    }

    pub const fn get(self) -> usize {
        self.0
    }
}

impl<const MIN: u64, const MAX: u64> fmt::Debug for Count<MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Count<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = u64::deserialize(deserializer)?;
        check(n, MIN, MAX)
            .map_err(serde::de::Error::custom)
            .and_then(|n| usize::try_from(n).map_err(serde::de::Error::custom))
            .map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_hold_both_ways() {
        assert_eq!(Millis::<10, 100>::new(10).map(Millis::ms), Ok(10));
        assert_eq!(
            Millis::<10, 100>::new(101),
            Err(OutOfRange {
                value: 101,
                min: 10,
                max: 100
            })
        );
        assert!(Count::<1, 5>::new(0).is_err());
        assert_eq!(Count::<1, 5>::new(5).map(Count::get), Ok(5));
        let d: Result<Count<1, 5>, _> = serde_json::from_str("0");
        assert!(
            d.expect_err("0 < 1")
                .to_string()
                .contains("0 is outside 1..=5")
        );
        let d: Millis<10, 100> = serde_json::from_str("50").expect("in range");
        assert_eq!(d.get(), Duration::from_millis(50));
        assert_eq!(serde_json::to_string(&d).expect("serialize"), "50");
    }
}
