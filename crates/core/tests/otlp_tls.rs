//! A daemon's start-up with an `https` collector: the exporters are built with TLS and the CA
//! file, and a CA file that cannot be used stops it with the setting's name. (Spans reaching
//! an https collector end to end: system-tests `telemetry.rs`.)

use ledgerboard_core::config::{LogSettings, TelemetrySettings};

#[tokio::test]
async fn an_https_endpoint_is_accepted_at_start_up_with_its_ca_file() {
    let pki = ledgerboard_testkit::tls::TestPki::generate();
    let settings = TelemetrySettings {
        otlp_endpoint: "https://127.0.0.1:4317".into(),
        otlp_ca_file: pki.ca_file.display().to_string(),
        ..TelemetrySettings::default()
    };
    settings.validate().expect("https with a CA file is valid");
    let broken = TelemetrySettings {
        otlp_ca_file: pki.path("missing.pem").display().to_string(),
        ..settings.clone()
    };
    let err = ledgerboard_core::telemetry::init("otlp-tls-test", &LogSettings::default(), &broken)
        .err()
        .expect("a missing CA file stops the start-up");
    assert!(err.to_string().contains("telemetry.otlp_ca_file"), "{err}");
    let telemetry =
        ledgerboard_core::telemetry::init("otlp-tls-test", &LogSettings::default(), &settings)
            .unwrap_or_else(|e| panic!("start-up with an https collector: {e}"));
    drop(telemetry);
}
