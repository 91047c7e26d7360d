//! `[events]`: the event log (issue 40, core `events/`), read by every process that runs its
//! upkeep (the api and the dispatcher) and by the projector (`rank.top_changed`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Millis;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EventsSettings {
    /// Between sequencer turns: at most this long before a committed event gets its position
    /// and reaches the feed and the dispatcher.
    pub sequence_interval_ms: Millis<5, 60_000>,
    /// Events are kept this many hours; a feed cursor older than that is refused (410).
    pub retention_hours: u32,
    /// Between retention sweeps.
    pub sweep_interval_ms: Millis<1_000, 86_400_000>,
}

impl Default for EventsSettings {
    fn default() -> Self {
        Self {
            sequence_interval_ms: const { Millis::of(50) },
            retention_hours: 168,
            sweep_interval_ms: const { Millis::of(60_000) },
        }
    }
}

impl EventsSettings {
    pub fn validate(&self) -> Result<(), super::ConfigError> {
        super::in_range(
            "events.retention_hours",
            u64::from(self.retention_hours),
            1,
            24 * 3_650,
        )
    }

    pub fn sequence_interval(&self) -> Duration {
        self.sequence_interval_ms.get()
    }

    pub fn sweep_interval(&self) -> Duration {
        self.sweep_interval_ms.get()
    }
}
