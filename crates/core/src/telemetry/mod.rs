//! Logs, traces and metrics for every binary.
//!
//! - Logs go to stderr, so that stdout stays free for a command's own output (JSON reports,
//!   `lbctl status`).
//! - Traces: `tracing` spans, turned into OpenTelemetry spans and exported over OTLP when
//!   `telemetry.otlp_endpoint` is set. Without one, spans still get trace and span ids (so a
//!   command's trace context can travel in its outbox row), and nothing is exported.
//! - Metrics: every crate's instruments, built with the helpers of [`metrics`] from the global
//!   meter provider installed here, read by a Prometheus registry that `/metrics` renders, and
//!   pushed over OTLP as well when an endpoint is set.
//!
//! A leaf: nothing here imports the crate's other modules but `config`; the stores and the
//! daemons call into it.

pub mod metrics;
pub mod trace_context;

use std::io::IsTerminal;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::tonic_types::transport::{Certificate, ClientTlsConfig};
use opentelemetry_otlp::{WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{LogFormat, LogSettings, TelemetrySettings};
use crate::tls::TlsFileError;

/// How long buffered spans and metrics may take to reach the collector when a daemon exits
/// (on top of `shutdown.grace_ms`).
pub const FLUSH_LIMIT: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry: cannot set up the OTLP exporter for {endpoint}: {reason}")]
    Otlp { endpoint: String, reason: String },
    #[error("telemetry: cannot set up the Prometheus registry: {0}")]
    Prometheus(String),
}

/// The installed providers. Keep it until the process ends; [`Telemetry::shutdown`] flushes
/// what is still buffered.
pub struct Telemetry {
    registry: prometheus::Registry,
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
}

impl Telemetry {
    /// The registry `/metrics` renders.
    pub fn registry(&self) -> prometheus::Registry {
        self.registry.clone()
    }

    /// Flushes buffered spans and metrics to the collector, for at most [`FLUSH_LIMIT`].
    pub async fn shutdown(self) {
        let limit = FLUSH_LIMIT;
        let tracer = self.tracer_provider;
        let meter = self.meter_provider;
        // The SDK's shutdown blocks on its export threads: keep it off the async workers.
        let flush = tokio::task::spawn_blocking(move || {
            let _ = tracer.shutdown();
            let _ = meter.shutdown();
        });
        if tokio::time::timeout(limit, flush).await.is_err() {
            tracing::warn!(
                ?limit,
                "telemetry not flushed within the bound; some spans or metrics are lost"
            );
        }
    }
}

/// Installs logging, tracing and metrics for the daemon `service`. Call it first, inside the
/// Tokio runtime (the OTLP client needs it), before any instrument is used: instruments taken
/// before it would stay no-ops.
pub fn init(
    service: &'static str,
    log: &LogSettings,
    settings: &TelemetrySettings,
) -> Result<Telemetry, TelemetryError> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let resource = Resource::builder()
        .with_service_name(service)
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        // Replicas push over OTLP with nothing else to tell them apart (Prometheus adds
        // `instance` itself when it scrapes). Kubernetes sets HOSTNAME to the pod name.
        .with_attribute(opentelemetry::KeyValue::new(
            "service.instance.id",
            crate::ids::instance_id("local"),
        ))
        .build();
    let endpoint = (!settings.otlp_endpoint.is_empty()).then_some(settings.otlp_endpoint.as_str());
    let otlp_error = |reason: String| TelemetryError::Otlp {
        endpoint: endpoint.unwrap_or_default().to_string(),
        reason,
    };

    let tls = otlp_tls(settings).map_err(|e| otlp_error(e.to_string()))?;

    let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
        settings.trace_sample_ratio,
    )));
    let mut tracer_builder = SdkTracerProvider::builder()
        .with_resource(resource.clone())
        .with_sampler(sampler);
    if let Some(endpoint) = endpoint {
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_timeout(settings.otlp_timeout());
        if let Some(tls) = &tls {
            exporter = exporter.with_tls_config(tls.clone());
        }
        let exporter = exporter.build().map_err(|e| otlp_error(e.to_string()))?;
        tracer_builder = tracer_builder.with_batch_exporter(exporter);
    }
    let tracer_provider = tracer_builder.build();

    let registry = prometheus::Registry::new();
    let prometheus_reader = opentelemetry_prometheus::exporter()
        .with_registry(registry.clone())
        .scope_info_enabled(false)
        .build()
        .map_err(|e| TelemetryError::Prometheus(e.to_string()))?;
    let mut meter_builder = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_reader(prometheus_reader);
    if let Some(endpoint) = endpoint {
        let mut exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_timeout(settings.otlp_timeout());
        if let Some(tls) = &tls {
            exporter = exporter.with_tls_config(tls.clone());
        }
        let exporter = exporter.build().map_err(|e| otlp_error(e.to_string()))?;
        meter_builder = meter_builder.with_reader(
            PeriodicReader::builder(exporter)
                .with_interval(settings.metrics_export_interval())
                .build(),
        );
    }
    let meter_provider = meter_builder.build();
    opentelemetry::global::set_meter_provider(meter_provider.clone());

    let tracer = tracer_provider.tracer(service);
    // Spans carry what the code gives them (and their target), not the layer's other extras:
    // the busy and idle times (a clock read at every enter and exit of every span, each poll
    // of a request's future), the thread (a name copied per span, meaningless on a
    // work-stealing runtime) and the source location (constant per span name). Turning them
    // off took 0.4-4.3 us off the api's CPU per request in 11 of 12 paired measurements
    // (docs/performance.md, runs H1-H4). Nor is a span's OpenTelemetry context made the
    // thread's current one at every enter: nothing here reads `Context::current()` (a trace
    // context is read from the span, `trace_context.rs`), and a new span's parent is then the
    // current tracing span's, the same span. Activation cost 350-380 ns per span of four
    // enters in-process (1,540-1,580 against 1,180-1,216 ns, with the fmt layer on).
    install_subscriber(
        log,
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_tracked_inactivity(false)
                .with_threads(false)
                .with_location(false)
                .with_context_activation(false),
        ),
    );
    if let Some(endpoint) = endpoint {
        tracing::info!(endpoint, "exporting traces and metrics over OTLP");
    }
    Ok(Telemetry {
        registry,
        tracer_provider,
        meter_provider,
    })
}

/// TLS to an `https` collector: its certificate must chain to `telemetry.otlp_ca_file`, else
/// to the system's roots, and name the host. The file is read here, so a bad one stops the
/// daemon at start-up. `None` for an `http` collector.
fn otlp_tls(settings: &TelemetrySettings) -> Result<Option<ClientTlsConfig>, TlsFileError> {
    if !settings.otlp_tls() {
        return Ok(None);
    }
    let config = ClientTlsConfig::new();
    Ok(Some(if settings.otlp_ca_file.is_empty() {
        config.with_native_roots()
    } else {
        let path = std::path::Path::new(&settings.otlp_ca_file);
        // Parsed here for an error that names the setting; tonic takes the PEM as it is.
        crate::tls::certificates("telemetry.otlp_ca_file", path)?;
        config.ca_certificate(Certificate::from_pem(crate::tls::read_pem(
            "telemetry.otlp_ca_file",
            path,
        )?))
    }))
}

/// Logging only, for `lbctl` and tools. The filter was validated with the settings; should it
/// still fail (it cannot once validated), logging falls back to `info` rather than to nothing.
pub fn init_logging(settings: &LogSettings) {
    install_subscriber::<
        tracing_opentelemetry::OpenTelemetryLayer<_, opentelemetry_sdk::trace::Tracer>,
    >(settings, None);
}

fn install_subscriber<L>(settings: &LogSettings, otel: Option<L>)
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_new(&settings.filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(otel).with(filter);
    let result = match settings.format {
        LogFormat::Human => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_writer(std::io::stderr),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    // A second call (tests) keeps the first subscriber.
    let _ = result;
}

#[cfg(test)]
mod tests {
    use super::otlp_tls;
    use crate::config::TelemetrySettings;

    fn endpoint(url: &str, ca_file: &str) -> TelemetrySettings {
        TelemetrySettings {
            otlp_endpoint: url.into(),
            otlp_ca_file: ca_file.into(),
            ..TelemetrySettings::default()
        }
    }

    #[test]
    fn an_https_collector_gets_tls_with_its_ca_file() {
        let pki = ledgerboard_testkit::tls::TestPki::generate();
        let ca = pki.ca_file.display().to_string();
        assert!(matches!(otlp_tls(&endpoint("http://c:4317", "")), Ok(None)));
        assert!(matches!(
            otlp_tls(&endpoint("https://c:4317", &ca)),
            Ok(Some(_))
        ));
        assert!(matches!(
            otlp_tls(&endpoint("https://c:4317", "")),
            Ok(Some(_))
        ));
        let missing = otlp_tls(&endpoint("https://c:4317", "/nonexistent.pem"))
            .expect_err("a CA file that is not there");
        assert!(
            missing.to_string().contains("telemetry.otlp_ca_file"),
            "{missing}"
        );
        let not_pem = pki.path("not.pem");
        std::fs::write(&not_pem, "no certificate here").expect("write");
        let err = otlp_tls(&endpoint("https://c:4317", &not_pem.display().to_string()))
            .expect_err("a file with no certificate");
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
    }

    /// The whole start-up with an `https` collector (the exporters built with TLS and the CA
    /// file). Here, not among the integration tests: `init` installs the process-wide
    /// providers and subscriber, which would reach every other test of a shared binary.
    /// (Spans reaching an https collector end to end: system-tests `telemetry.rs`.)
    #[tokio::test]
    async fn an_https_endpoint_is_accepted_at_start_up_with_its_ca_file() {
        let pki = ledgerboard_testkit::tls::TestPki::generate();
        let settings = endpoint("https://127.0.0.1:4317", &pki.ca_file.display().to_string());
        settings.validate().expect("https with a CA file is valid");
        let broken = endpoint(
            "https://127.0.0.1:4317",
            &pki.path("missing.pem").display().to_string(),
        );
        let log = crate::config::LogSettings::default();
        let err = super::init("otlp-tls-test", &log, &broken)
            .err()
            .expect("a missing CA file stops the start-up");
        assert!(err.to_string().contains("telemetry.otlp_ca_file"), "{err}");
        let telemetry = super::init("otlp-tls-test", &log, &settings)
            .unwrap_or_else(|e| panic!("start-up with an https collector: {e}"));
        drop(telemetry);
    }
}
