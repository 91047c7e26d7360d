//! `[events]`: the event log (issue 40, core `events/`), read by every process that runs its
//! upkeep (the api and the dispatcher) and by the projector (`rank.top_changed`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Count, Millis};

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
    /// Events an enabled webhook subscription has not been delivered yet are kept past
    /// `retention_hours` until they are this old; then retention deletes them too and the
    /// subscription records the loss (docs/dispatcher.md, "Retention"). At least
    /// `retention_hours`.
    pub webhook_hold_hours: u32,
    /// `rank.top_changed`: how many of a board's first entries the projector watches (the
    /// same N for every board); 0 writes no such event and reads nothing for it.
    pub top_n: Count<0, 100>,
}

impl Default for EventsSettings {
    fn default() -> Self {
        Self {
            sequence_interval_ms: const { Millis::of(50) },
            retention_hours: 168,
            sweep_interval_ms: const { Millis::of(60_000) },
            webhook_hold_hours: 720,
            top_n: const { Count::of(10) },
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
        )?;
        super::in_range(
            "events.webhook_hold_hours",
            u64::from(self.webhook_hold_hours),
            u64::from(self.retention_hours),
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
