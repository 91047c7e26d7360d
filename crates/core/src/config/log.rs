//! `[log]`: the format of log lines and which of them are written.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogSettings {
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `info,ledgerboard_core=debug`.
    pub filter: String,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Human,
            filter: "info".into(),
        }
    }
}

impl LogSettings {
    pub fn validate(&self) -> Result<(), ConfigError> {
        tracing_subscriber::EnvFilter::try_new(&self.filter)
            .map(|_| ())
            .map_err(|e| invalid("log.filter", e))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bad_log_settings_name_the_setting() {
        assert_eq!(
            crate::config::check_refusals::<crate::config::SharedOnly>(&[
                ("LEDGERBOARD__LOG__FORMAT", "xml", "format"),
                ("LEDGERBOARD__LOG__FILTER", "info,[", "log.filter"),
            ]),
            Ok(())
        );
    }
}
