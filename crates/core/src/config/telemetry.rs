//! `[telemetry]`: where traces and metrics are exported, and how often the outbox is sampled.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Millis, invalid};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TelemetrySettings {
    /// OTLP/gRPC collector, e.g. `http://otel-collector:4317`, or `https://…` for TLS. Empty:
    /// traces and metrics are not exported (metrics stay scrapeable at `/metrics`).
    pub otlp_endpoint: String,
    /// PEM file of the CA certificates an `https` collector's certificate must chain to.
    /// Empty: the system's roots.
    pub otlp_ca_file: String,
    /// Bound on one export call to the collector.
    pub otlp_timeout_ms: Millis<100, 60_000>,
    /// How often metrics are pushed to the collector.
    pub metrics_export_interval_ms: Millis<100, 3_600_000>,
    /// Fraction of new traces kept (a request that arrives with a sampled `traceparent` is
    /// always kept).
    pub trace_sample_ratio: f64,
    /// How often each daemon reads the outbox's pending count, oldest pending age and parked
    /// count for its gauges.
    pub outbox_sample_interval_ms: Millis<100, 3_600_000>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_endpoint: String::new(),
            otlp_ca_file: String::new(),
            otlp_timeout_ms: const { Millis::of(5_000) },
            metrics_export_interval_ms: const { Millis::of(15_000) },
            trace_sample_ratio: 1.0,
            outbox_sample_interval_ms: const { Millis::of(5_000) },
        }
    }
}

impl TelemetrySettings {
    /// The bounds the types cannot hold: the endpoint's scheme, a CA file only for https, and
    /// the ratio.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.otlp_endpoint.is_empty() {
            let ok = url::Url::parse(&self.otlp_endpoint)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                return Err(invalid(
                    "telemetry.otlp_endpoint",
                    "not an http:// or https:// URL (empty exports nothing)",
                ));
            }
        }
        if !self.otlp_ca_file.is_empty() && !self.otlp_tls() {
            return Err(invalid(
                "telemetry.otlp_ca_file",
                "set, but telemetry.otlp_endpoint is not https://: the file would not be used",
            ));
        }
        if !(0.0..=1.0).contains(&self.trace_sample_ratio) {
            return Err(invalid(
                "telemetry.trace_sample_ratio",
                format!("{} is outside 0.0..=1.0", self.trace_sample_ratio),
            ));
        }
        Ok(())
    }

    /// The collector is reached over TLS.
    pub fn otlp_tls(&self) -> bool {
        self.otlp_endpoint.starts_with("https://")
    }
    pub fn otlp_timeout(&self) -> Duration {
        self.otlp_timeout_ms.get()
    }
    pub fn metrics_export_interval(&self) -> Duration {
        self.metrics_export_interval_ms.get()
    }
    pub fn outbox_sample_interval(&self) -> Duration {
        self.outbox_sample_interval_ms.get()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::{env, load};

    #[test]
    fn telemetry_settings_are_checked() {
        let ok = load(env(&[(
            "LEDGERBOARD__TELEMETRY__OTLP_ENDPOINT",
            "http://collector:4317",
        )]))
        .expect("valid");
        assert_eq!(ok.telemetry.otlp_endpoint, "http://collector:4317");
        let tls = load(env(&[
            (
                "LEDGERBOARD__TELEMETRY__OTLP_ENDPOINT",
                "https://collector:4317",
            ),
            ("LEDGERBOARD__TELEMETRY__OTLP_CA_FILE", "/ca.pem"),
        ]))
        .expect("https with a CA file is valid");
        assert!(tls.telemetry.otlp_tls());
        for (name, value, setting) in [
            (
                "OTLP_ENDPOINT",
                "ftp://collector:4317",
                "telemetry.otlp_endpoint",
            ),
            ("OTLP_CA_FILE", "/ca.pem", "telemetry.otlp_ca_file"),
            ("OTLP_ENDPOINT", "collector:4317", "telemetry.otlp_endpoint"),
            ("TRACE_SAMPLE_RATIO", "1.5", "telemetry.trace_sample_ratio"),
            ("OTLP_TIMEOUT_MS", "0", "telemetry.otlp_timeout_ms"),
            (
                "OUTBOX_SAMPLE_INTERVAL_MS",
                "10",
                "telemetry.outbox_sample_interval_ms",
            ),
        ] {
            let var = format!("LEDGERBOARD__TELEMETRY__{name}");
            let err = load(env(&[(var.as_str(), value)]))
                .expect_err(value)
                .to_string();
            assert!(err.contains(setting), "{value}: {err}");
        }
    }
}
