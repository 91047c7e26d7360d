//! `[shutdown]`: how long a daemon may take to stop.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Millis;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShutdownSettings {
    /// After SIGTERM, how long in-flight work may take before the process exits anyway. Keep it
    /// below Kubernetes' `terminationGracePeriodSeconds`.
    pub grace_ms: Millis<0, 3_600_000>,
}

impl Default for ShutdownSettings {
    fn default() -> Self {
        Self {
            grace_ms: const { Millis::of(25_000) },
        }
    }
}

impl ShutdownSettings {
    pub fn grace(&self) -> Duration {
        self.grace_ms.get()
    }
}
